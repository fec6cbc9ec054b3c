import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/platform/config";
import { webFilesFrom } from "../src/platform/node/web-files";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";

// The service configured for OpenID Connect: only the issuer is given; its discovery
// document names the JWKS the tokens are verified with. With no API audience configured, a
// token must name the client: the loopback provider's say so as `azp` (the client they
// were issued to), as Keycloak's access tokens do.
const CLIENT = "plant-chat-web";
const oidc = (idp: Harness["idp"], extra: Record<string, string> = {}) => ({
  AUTH_JWKS_URL: "",
  AUTH_ISSUER: "",
  AUTH_AUDIENCE: "",
  AUTH_OIDC_ISSUER: idp.issuer,
  AUTH_OIDC_CLIENT_ID: CLIENT,
  ...extra,
});

let h: Harness;
const dist = mkdtempSync(join(tmpdir(), "oidc-web-dist-"));
writeFileSync(join(dist, "index.html"), "<!doctype html><title>client</title>");
beforeAll(async () => {
  h = await createHarness({ env: (idp) => oidc(idp) });
  h.deps.assets = webFilesFrom(dist);
});
afterAll(async () => {
  await h.close();
  rmSync(dist, { recursive: true, force: true });
});

describe("OpenID Connect login", () => {
  it("tells the web client where to log in", async () => {
    const res = await h.request("/client-config");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      auth: { mode: "oidc", issuer: h.idp.issuer, clientId: "plant-chat-web", scopes: "openid profile email", audience: null },
    });
  });

  it("lets the page talk to the issuer and nothing else", async () => {
    const res = await h.request("/", { headers: { Accept: "text/html" } });
    expect(res.status).toBe(200);
    const csp = res.headers.get("Content-Security-Policy")!;
    const origin = new URL(h.idp.issuer).origin;
    expect(csp).toContain(`connect-src 'self' ${origin};`);
    expect(csp).toContain(`form-action 'self' ${origin};`);
  });

  it("verifies access tokens with the JWKS named by discovery, fetched once", async () => {
    const token = await h.idp.sign("google|123", { azp: CLIENT, name: "Grace Hopper", picture: "https://img.example.com/grace.png" });
    const me = await h.request("/me", { token });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ name: "Grace Hopper", avatarUrl: "https://img.example.com/grace.png", identity: { subject: "google|123" } });
    expect((await h.request("/me", { token: await h.idp.sign("google|456", { azp: CLIENT }) })).status).toBe(200);
    expect(h.idp.discoveryHits()).toBe(1);
  });

  it("seeds name and avatar only on first sight, and keeps what the person set", async () => {
    const first = await h.idp.sign("github|9", { azp: CLIENT, name: "Linus", picture: "https://img.example.com/l.png" });
    await h.request("/me", { method: "PATCH", token: first, json: { name: "Torvalds", avatarUrl: null } });
    const later = await h.idp.sign("github|9", { azp: CLIENT, name: "Linus T", picture: "https://img.example.com/new.png" });
    expect(await (await h.request("/me", { token: later })).json()).toMatchObject({ name: "Torvalds", avatarUrl: null });
  });

  it("ignores a picture claim that is not a plain http(s) URL", async () => {
    const token = await h.idp.sign("evil|1", { azp: CLIENT, name: "Mallory", picture: "javascript:alert(1)" });
    expect(await (await h.request("/me", { token })).json()).toMatchObject({ name: "Mallory", avatarUrl: null });
    // The first write seeds too (the row is created by the chat, not by /me).
    const other = await h.idp.sign("evil|2", { azp: CLIENT, picture: "https://user:pw@img.example.com/x.png" });
    await h.request("/contexts", { method: "POST", token: other, json: { name: "x" } });
    expect(await (await h.request("/me", { token: other })).json()).toMatchObject({ avatarUrl: null });
  });

  it("refuses a token from another issuer", async () => {
    const stranger = await createHarness();
    try {
      await expectError(await h.request("/me", { token: await stranger.signIn("eve") }), 401, /signature is invalid|untrusted issuer|not trust/);
    } finally {
      await stranger.close();
    }
  });

  it("has no local login", async () => {
    await expectError(await h.request("/auth/local", { method: "POST", json: { name: "alice" } }), 404);
  });
});

describe("OpenID Connect with an audience", () => {
  it("requires AUTH_OIDC_AUDIENCE as the token's aud and tells the client to ask for it", async () => {
    const other = await createHarness({ env: (idp) => oidc(idp, { AUTH_OIDC_AUDIENCE: "https://api.plant-chat.test" }) });
    try {
      expect(await (await other.request("/client-config")).json()).toMatchObject({ auth: { audience: "https://api.plant-chat.test" } });
      // The loopback provider signs for its own audience, not the API's.
      await expectError(await other.request("/me", { token: await other.signIn("ann") }), 401, /another audience/);
    } finally {
      await other.close();
    }
  });
});

describe("OpenID Connect when the issuer is down", () => {
  it("answers 503 saying so, without re-fetching discovery on every request", async () => {
    const down = await createHarness({ env: (idp) => oidc(idp) });
    try {
      down.idp.setDiscoveryUp(false);
      const token = await down.signIn("bob");
      const res = await down.request("/me", { token });
      const body = await expectError(res, 503, /discovery document .* could not be fetched/);
      expect(body.message).toContain("/.well-known/openid-configuration");
      expect(res.headers.get("Retry-After")).toBe("10");
      await expectError(await down.request("/me", { token }), 503, /try again shortly/);
      await expectError(await down.request("/plants", { token }), 503);
      expect(down.idp.discoveryHits()).toBe(1);
    } finally {
      await down.close();
    }
  });

  it("refuses to start with an issuer but no client id", async () => {
    expect(() => parseConfig({ AUTH_OIDC_ISSUER: "https://login.example.com/" })).toThrow(ConfigError);
    expect(() => parseConfig({ AUTH_OIDC_ISSUER: "https://login.example.com/", AUTH_OIDC_CLIENT_ID: "web", AUTH_JWKS_URL: "https://x.example.com/jwks" })).toThrow(
      /only one of AUTH_OIDC_ISSUER/,
    );
  });
});
