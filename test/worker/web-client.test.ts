import { describe, expect, it } from "vitest";
import { call } from "./support";

const html = { Accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

function expectSecurityHeaders(res: Response) {
  const csp = res.headers.get("Content-Security-Policy") ?? "";
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self';");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
}

describe("the web client on the Worker", () => {
  it("answers / in a browser with index.html and its Content-Security-Policy", async () => {
    const res = await call("/", { headers: html });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Cache-Control")).toBe("no-cache");
    expectSecurityHeaders(res);
    expect(await res.text()).toContain('<div id="app">');
  });

  it("serves a hashed asset as immutable and another file as no-cache", async () => {
    const js = await call("/assets/index-abc123.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("Content-Type")).toMatch(/javascript/);
    expect(js.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(await js.text()).toBe("console.log('app');");
    const theme = await call("/theme.js");
    expect(theme.headers.get("Cache-Control")).toBe("no-cache");
    expect(await theme.text()).toContain("dataset.theme");
  });

  it("answers the client's deep links with index.html", async () => {
    for (const path of ["/c/ctx_x", "/settings", "/settings/usage", "/s/shr_abc", "/login", "/admin", "/admin/people/usr_x", "/admin/usage-report"]) {
      const res = await call(path, { headers: html });
      expect(res.status, path).toBe(200);
      expectSecurityHeaders(res);
      expect(await res.text(), path).toContain('<div id="app">');
    }
  });

  it("answers a kind of page with its copy of index.html where the build has one, else index.html", async () => {
    const share = await call("/s/shr_abc", { headers: html });
    expect(share.headers.get("Vary")).toContain("Cookie");
    expect(await share.text()).toContain("<title>share page</title>");
    const chat = await call("/c/ctx_x", { headers: { ...html, Cookie: "signed_in=1" } });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain('<script src="/theme.js">');
  });

  it("keeps the API's JSON on API paths", async () => {
    const health = await call("/health", { headers: html });
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });

    const plants = await call("/plants", { headers: html });
    expect(plants.status).toBe(401);
    expect(plants.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await plants.json()).toMatchObject({ error: 401 });

    const nope = await call("/nope", { headers: { Accept: "application/json" } });
    expect(nope.status).toBe(404);
    expect(await nope.json()).toEqual({ error: 404, message: "no such endpoint: GET /nope", code: "not_found" });

    const missing = await call("/assets/missing.js");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 404 });
  });

  it("renders /docs as a same-origin page under the CSP", async () => {
    const res = await call("/docs", { headers: html });
    expect(res.status).toBe(200);
    expectSecurityHeaders(res);
    const page = await res.text();
    expect(page).toContain('<script src="/docs/swagger-ui-bundle.js"></script>');
    expect(page).not.toMatch(/https?:\/\//);
  });

  it("has no local login when an identity provider is configured", async () => {
    const res = await call("/auth/local", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"a"}' });
    expect(res.status).toBe(404);
    const config = await (await call("/client-config")).json();
    // Tokens from elsewhere (a public key here), not a name form: the wallet and the provider's tokens.
    expect(config).toMatchObject({
      auth: { mode: "token" },
      signIn: { methods: [{ method: "wallet" }, { method: "provider-token" }] },
      transcription: { available: false },
    });
  });
});
