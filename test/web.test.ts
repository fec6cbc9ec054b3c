import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { htmlSecurityHeaders } from "../src/platform/http/web-client";
import { DEFAULT_AVATAR_HOSTS, parseConfig } from "../src/platform/config";
import { createRuntime } from "../src/platform/deps";
import { expectError } from "./support/expect-error";
import { createHarness } from "./support/harness";
import { failedStart, startServerProcess, type ServerProcess } from "./support/server-process";

// A tiny build of the web client, as `npm run build:web` lays it out.
const dist = mkdtempSync(join(tmpdir(), "web-dist-"));
mkdirSync(join(dist, "assets"));
const INDEX = '<!doctype html><html><head><script src="/theme.js"></script></head><body><div id="app"></div></body></html>';
writeFileSync(join(dist, "index.html"), INDEX);
// The copies of it that name what each kind of page loads (web/vite-route-pages.ts); none for
// settings here, which then gets index.html, as from a build without them.
mkdirSync(join(dist, "pages"));
const PAGES = { login: "login page", chat: "chat page", share: "share page" };
for (const [kind, text] of Object.entries(PAGES)) writeFileSync(join(dist, "pages", `${kind}.html`), `<!doctype html><title>${text}</title>`);
writeFileSync(join(dist, "theme.js"), "document.documentElement.dataset.theme = 'light';");
writeFileSync(join(dist, "assets", "index-abc123.js"), "console.log('app');");
writeFileSync(join(dist, "assets", "index-abc123.css"), "body { margin: 0 }");
const BIG_JS = `export const words = ${JSON.stringify(Array.from({ length: 2000 }, (_, i) => `word${i % 50}`))};`;
writeFileSync(join(dist, "assets", "vendor-def456.js"), BIG_JS);
writeFileSync(join(tmpdir(), "outside-web-dist.txt"), "secret");

const html = { Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
const json = { Accept: "application/json" };

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess({ WEB_DIST_DIR: dist });
}, 60_000);
afterAll(async () => {
  await server?.close();
  rmSync(dist, { recursive: true, force: true });
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers });

function expectSecurityHeaders(res: Response) {
  const csp = res.headers.get("content-security-policy") ?? "";
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self';");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("object-src 'none'");
  expect(csp).not.toContain("unsafe-inline");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("referrer-policy")).toBe("no-referrer");
}

describe("the web client on the Node server", () => {
  it("answers a page in a browser with index.html, no-cache and the security headers", async () => {
    const res = await get("/archived", html);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expectSecurityHeaders(res);
    expect(await res.text()).toBe(INDEX);
  });

  it("answers the client's deep links with index.html so that a reload keeps the page", async () => {
    const admin = ["/admin", "/admin/people", "/admin/people/usr_abc", "/admin/usage-report", "/admin/invite-codes", "/admin/audit-log"];
    for (const path of ["/settings", "/settings/api-keys", "/archived", "/auth/callback?code=x&state=y", "/no-such-page", ...admin]) {
      const res = await get(path, { ...html, Cookie: "signed_in=1" });
      expect(res.status, path).toBe(200);
      expectSecurityHeaders(res);
      expect(await res.text(), path).toBe(INDEX);
    }
  });

  it("answers each kind of page with its copy of index.html, the signed-in app's by the signed_in cookie", async () => {
    const signedIn = { ...html, Cookie: "theme=dark; signed_in=1" };
    const cases: Array<[string, Record<string, string>, string]> = [
      ["/login", html, PAGES.login],
      ["/s/shr_abc", html, PAGES.share],
      ["/s/shr_abc", signedIn, PAGES.share],
      ["/", signedIn, PAGES.chat],
      ["/c/ctx_123", signedIn, PAGES.chat],
      // Never signed in here, or signed out: the login screen is what the page will show.
      ["/", html, PAGES.login],
      ["/c/ctx_123", html, PAGES.login],
      ["/settings", { ...html, Cookie: "signed_in=" }, PAGES.login],
    ];
    for (const [path, headers, title] of cases) {
      const res = await get(path, headers);
      expect(res.status, path).toBe(200);
      expectSecurityHeaders(res);
      expect(res.headers.get("vary"), path).toContain("Cookie");
      expect(await res.text(), `${path} ${headers.Cookie ?? ""}`).toContain(`<title>${title}</title>`);
    }
  });

  it("answers a HEAD navigation with the page's headers and no body", async () => {
    const res = await fetch(`${server.url}/settings`, { method: "HEAD", headers: html });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expectSecurityHeaders(res);
    expect(await res.text()).toBe("");
  });

  it("serves hashed assets as immutable and other files as no-cache, with their types", async () => {
    const js = await get("/assets/index-abc123.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await js.text()).toBe("console.log('app');");
    const css = await get("/assets/index-abc123.css");
    expect(css.headers.get("content-type")).toMatch(/^text\/css/);
    const theme = await get("/theme.js");
    expect(theme.headers.get("cache-control")).toBe("no-cache");
    expect(await theme.text()).toContain("dataset.theme");
  });

  it("sends text files gzipped to clients that accept it, and plain to others", async () => {
    const { port } = new URL(server.url);
    const raw = (encoding?: string) =>
      new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port, path: "/assets/vendor-def456.js", headers: encoding ? { "Accept-Encoding": encoding } : {} }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on("error", reject);
        req.end();
      });
    const zipped = await raw("gzip, deflate, br");
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(zipped.body.length).toBeLessThan(BIG_JS.length / 4);
    expect(gunzipSync(zipped.body).toString()).toBe(BIG_JS);
    const plain = await raw();
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.toString()).toBe(BIG_JS);
  });

  it("carries the request id and the CORS headers on files and pages, as on every reply", async () => {
    const origin = { Origin: "https://app.example" };
    const replies = {
      "a file": await get("/assets/vendor-def456.js", { ...origin, "Accept-Encoding": "gzip" }),
      "the page": await get("/settings", { ...origin, ...html }),
    };
    for (const [kind, res] of Object.entries(replies)) {
      expect(res.status, kind).toBe(200);
      expect(res.headers.get("x-request-id"), kind).toMatch(/^[\w-]{20,}$/);
      expect(res.headers.get("access-control-allow-origin"), kind).toBe("*");
      expect(res.headers.get("access-control-expose-headers"), kind).toMatch(/X-Request-Id/);
      expect(res.headers.get("vary"), kind).toMatch(/Origin/);
    }
    // A gzipped file varies by encoding as well as by origin.
    expect(replies["a file"].headers.get("vary")).toMatch(/Accept-Encoding/);
  });

  it("answers a HEAD of a file with its headers and no body", async () => {
    const res = await fetch(`${server.url}/assets/index-abc123.js`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await res.text()).toBe("");
  });

  it("keeps files outside the build out of reach", async () => {
    for (const path of ["/../outside-web-dist.txt", "/%2e%2e/outside-web-dist.txt", "/assets/..%2f..%2foutside-web-dist.txt"]) {
      const res = await get(path, json);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain("secret");
    }
  });

  it("keeps every API path's JSON, also for a browser navigation", async () => {
    const health = await get("/health", html);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    await expectError(await get("/plants", html), 401);
    await expectError(await get("/contexts/ctx_x", html), 401);
    // An unknown path under an API resource stays the JSON 404 for a browser too.
    await expectError(await get("/contexts/ctx_x/nothing", html), 404);
    // The console's API beside the Admin area's pages: its paths answer their JSON to a browser.
    await expectError(await get("/admin/usage", html), 401);
    await expectError(await get("/admin/users/usr_x", html), 401);
    await expectError(await get("/admin/nothing", html), 404);
    const v1 = await get("/v1/nope", html);
    expect(v1.status).toBe(404);
    expect(await v1.json()).toMatchObject({ error: { type: "not_found_error" } });
    await expectError(await get("/nope", json), 404, /no such endpoint: GET \/nope/);
    await expectError(await get("/assets/missing.js", json), 404);
    await expectError(await fetch(`${server.url}/settings`, { method: "POST", headers: html }), 404);
  });

  it("renders /docs from the service's own files, with no third-party origin and no inline script", async () => {
    const res = await get("/docs", html);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expectSecurityHeaders(res);
    const page = await res.text();
    const references = [...page.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    expect(references).toEqual(expect.arrayContaining(["/docs/swagger-ui.css", "/docs/swagger-ui-bundle.js", "/docs/init.js"]));
    for (const ref of references) expect(ref, ref).toMatch(/^\/[^/]/);
    // Every <script> has a src: nothing inline for the CSP to block.
    expect(page.match(/<script\b[^>]*>/g)!.every((tag) => /\ssrc="/.test(tag))).toBe(true);
    expect(page.match(/<script\b[^>]*>([^<]*)<\/script>/g)!.every((s) => /><\/script>$/.test(s))).toBe(true);
  });

  it("reports local login in /client-config", async () => {
    const res = await get("/client-config");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      auth: { mode: "local" },
      signIn: { methods: [{ method: "wallet" }, { method: "local" }], origin: server.url },
      signUp: { policy: "open", turnstileSiteKey: null },
      transcription: { available: false, maxBytes: 10 * 1024 * 1024, maxSeconds: 120 },
    });
  });

  it("issues a 24-hour local token for a name, and the same name is the same user", async () => {
    const login = async (name: string) => {
      const res = await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name }) });
      expect(res.status).toBe(200);
      return (await res.json()) as { token: string; expiresAt: string };
    };
    const first = await login("  Alice  ");
    const hoursLeft = (Date.parse(first.expiresAt) - Date.now()) / 3_600_000;
    expect(hoursLeft).toBeGreaterThan(23.9);
    expect(hoursLeft).toBeLessThanOrEqual(24);
    const me = async (token: string) => (await (await get("/me", { Authorization: `Bearer ${token}` })).json()) as { id: string; name: string };
    const alice = await me(first.token);
    expect(alice.name).toBe("Alice");
    expect((await me((await login("Alice")).token)).id).toBe(alice.id);
    expect((await me((await login("Bob")).token)).id).not.toBe(alice.id);
  });

  it("refuses a local login without a usable name", async () => {
    for (const body of [{}, { name: "" }, { name: "   " }, { name: "x".repeat(101) }, { name: "a\u0007b" }, { name: 42 }]) {
      const res = await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      await expectError(res, 400, /name/);
    }
  });

  it("builds share links on its own address, never on the Host header", async () => {
    const { token } = (await (
      await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"sharer"}' })
    ).json()) as { token: string };
    const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const ctx = (await (await fetch(`${server.url}/contexts`, { method: "POST", headers: auth, body: '{"name":"x"}' })).json()) as { id: string };
    // fetch cannot forge Host; a raw HTTP request can, as any attacker's client does.
    const { port } = new URL(server.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        { host: "127.0.0.1", port, path: `/contexts/${ctx.id}/share`, method: "POST", headers: { ...auth, Host: "evil.example" } },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve(body));
        },
      );
      req.on("error", reject);
      req.end();
    });
    const link = JSON.parse(reply) as { url: string; token: string };
    expect(link.url).toBe(`${server.url}/s/${link.token}`);
    expect(reply).not.toContain("evil.example");
  });
});

describe("the Node server without a built web client", () => {
  it("says how to build it at / and keeps the API", async () => {
    const bare = await startServerProcess({ WEB_DIST_DIR: join(dist, "missing") });
    try {
      const res = await fetch(`${bare.url}/`, { headers: html });
      expect(res.status).toBe(503);
      expectSecurityHeaders(res);
      expect(await res.text()).toContain("npm run build:web");
      expect((await fetch(`${bare.url}/health`)).status).toBe(200);
    } finally {
      await bare.close();
    }
  }, 60_000);
});

describe("images on the client's pages", () => {
  const imgSrc = (csp: string) => /(?:^|; )img-src ([^;]*)/.exec(csp)?.[1]?.split(" ") ?? [];

  it("loads images only from the service and the avatar hosts, never from any https host", async () => {
    const res = await get("/", html);
    const sources = imgSrc(res.headers.get("content-security-policy") ?? "");
    expect(sources).toEqual(["'self'", "data:", "blob:", ...DEFAULT_AVATAR_HOSTS.split(" ")]);
    expect(sources).not.toContain("https:");
    expect(sources).not.toContain("*");
  });

  it("takes the avatar hosts from AVATAR_HOSTS, or none", () => {
    const csp = (env: Record<string, string>) => imgSrc(htmlSecurityHeaders(parseConfig(env))["Content-Security-Policy"]!);
    expect(csp({ AVATAR_HOSTS: "https://pics.example.com, https://*.cdn.example.net:8443" })).toEqual([
      "'self'", "data:", "blob:", "https://pics.example.com", "https://*.cdn.example.net:8443",
    ]);
    expect(csp({ AVATAR_HOSTS: "none" })).toEqual(["'self'", "data:", "blob:"]);
  });

  it("refuses AVATAR_HOSTS that are not https origins, saying what it wants", () => {
    for (const bad of ["https:", "*", "http://pics.example.com", "https://pics.example.com/path", "pics.example.com", "https://a.example none"]) {
      expect(() => parseConfig({ AVATAR_HOSTS: bad }), bad).toThrow(/AVATAR_HOSTS must be https origins such as https:\/\/avatars\.example\.com/);
    }
  });
});

describe("configuration of the web entry", () => {
  it("refuses to start in production without PUBLIC_BASE_URL", async () => {
    const { code, output } = await failedStart({ NODE_ENV: "production", AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "plant-chat-test" });
    expect(code).toBe(1);
    expect(output).toMatch(/PUBLIC_BASE_URL is required when NODE_ENV=production/);
  }, 60_000);

  it("has no local login when an identity provider is configured", async () => {
    const h = await createHarness();
    try {
      const res = await h.request("/auth/local", { method: "POST", json: { name: "alice" } });
      await expectError(res, 404, /no such endpoint: POST \/auth\/local/);
      await expectError(await h.request("/auth/local", { method: "POST", json: {} }), 404);
    } finally {
      await h.close();
    }
  });
});

describe("local login on the Worker (npm run dev)", () => {
  it("issues and trusts tokens with LOCAL_LOGIN_PRIVATE_JWK, and not in production", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const LOCAL_LOGIN_PRIVATE_JWK = JSON.stringify({ ...(await exportJWK(privateKey)), kid: "dev" });

    const runtime = await createRuntime(parseConfig({ LOCAL_LOGIN_PRIVATE_JWK, LOG_LEVEL: "error" }));
    const issued = await runtime.localLogin!("dana");
    expect(await runtime.verifyJwt(issued.token)).toMatchObject({ issuer: "local-login", subject: "local:dana", name: "dana" });

    await expect(
      createRuntime(parseConfig({ LOCAL_LOGIN_PRIVATE_JWK, NODE_ENV: "production", PUBLIC_BASE_URL: "https://chat.example.com" })),
    ).rejects.toThrow(/no identity provider is configured/);
  });
});
