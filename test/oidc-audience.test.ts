import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/platform/config";
import type { OidcProvider } from "./e2e/support/oidc-provider";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";
import { oidcLogin } from "./support/oidc-login";
import { failedStart } from "./support/server-process";

// Audience always bound (issue 24). The attack: with AUTH_OIDC_ISSUER and AUTH_OIDC_CLIENT_ID
// (as for Google-type providers) and no AUTH_OIDC_AUDIENCE, a token the same provider issued
// to another app for the same person signed in here, as { accessToken } and as a bearer
// token, and so did a token with no `aud` at all. Tested against a real OpenID provider
// (oidc-provider) with two clients: this service's web client and another app.

const APP = "http://localhost:9";
let oidc: OidcProvider;
let key: { privateKey: CryptoKey; jwk: JWK };
let h: Harness;
beforeAll(async () => {
  const { startOidcProvider } = await import("./e2e/support/oidc-provider");
  oidc = await startOidcProvider();
  const pair = await generateKeyPair("RS256", { extractable: true });
  key = { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.privateKey)), kid: "provider-key", alg: "RS256", use: "sig" } };
  oidc.configure(APP, { otherClients: ["other-app"], signingKey: key.jwk });
  h = await createHarness({
    env: { AUTH_JWKS_URL: "", AUTH_ISSUER: "", AUTH_AUDIENCE: "", AUTH_OIDC_ISSUER: oidc.issuer, AUTH_OIDC_CLIENT_ID: oidc.clientId },
  });
});
afterAll(async () => {
  await h?.close();
  await oidc?.close();
});

const ours = (login: string) => oidcLogin({ issuer: oidc.issuer, clientId: oidc.clientId, redirectUri: `${APP}/auth/callback`, login });
const theirs = (login: string) => oidcLogin({ issuer: oidc.issuer, clientId: "other-app", redirectUri: `${APP}/other-app/callback`, login });
const session = (proof: object) => h.request("/auth/session", { method: "POST", json: proof });

describe("OpenID Connect without an API audience: tokens must name this client", () => {
  it("refuses another app's ID token, its access token and its bearer token for the same person", async () => {
    const other = await theirs("alice");
    await expectError(await session({ idToken: other.idToken }), 401, /another audience/, "provider_token_invalid");
    await expectError(await session({ accessToken: other.accessToken }), 401, /another audience/, "provider_token_invalid");
    await expectError(await h.request("/me", { token: other.accessToken }), 401, /another audience/);
    await expectError(await h.request("/me", { token: other.idToken }), 401, /another audience/);
  });

  it("refuses a token of the provider's that names no audience", async () => {
    const token = await new SignJWT({ name: "Alice" })
      .setProtectedHeader({ alg: "RS256", kid: "provider-key" })
      .setIssuer(oidc.issuer)
      .setSubject("alice")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key.privateKey);
    await expectError(await session({ accessToken: token }), 401, /another audience/, "provider_token_invalid");
    await expectError(await h.request("/plants", { token }), 401, /another audience/);
  });

  it("takes this client's ID token (aud) and access token (its client_id), for the same account", async () => {
    const mine = await ours("bob");
    const byId = await session({ idToken: mine.idToken });
    expect(byId.status, await byId.clone().text()).toBe(200);
    const byAccess = await session({ accessToken: mine.accessToken });
    expect(byAccess.status).toBe(200);
    const idOf = async (res: Response) => ((await res.json()) as { user: { id: string } }).user.id;
    expect(await idOf(byId)).toBe(await idOf(byAccess));
    expect((await h.request("/me", { token: mine.accessToken })).status).toBe(200);
  });
});

describe("OpenID Connect with AUTH_OIDC_AUDIENCE", () => {
  it("takes only access tokens for that audience", async () => {
    const bound = await createHarness({
      env: {
        AUTH_JWKS_URL: "",
        AUTH_ISSUER: "",
        AUTH_AUDIENCE: "",
        AUTH_OIDC_ISSUER: oidc.issuer,
        AUTH_OIDC_CLIENT_ID: oidc.clientId,
        AUTH_OIDC_AUDIENCE: oidc.audience,
      },
    });
    try {
      const mine = await ours("carol");
      expect((await bound.request("/me", { token: mine.accessToken })).status).toBe(200);
      const other = await theirs("carol");
      await expectError(await bound.request("/me", { token: other.accessToken }), 401, /another audience/);
      // An ID token is for the client, not a bearer credential for the API.
      await expectError(await bound.request("/me", { token: mine.idToken }), 401, /another audience/);
    } finally {
      await bound.close();
    }
  });
});

describe("a configuration that cannot bind an audience", () => {
  it("is refused at start, naming AUTH_AUDIENCE", async () => {
    for (const source of [{ AUTH_JWKS_URL: "https://idp.example/jwks" }, { AUTH_PUBLIC_KEY: "{}" }, { AUTH_HS256_SECRET: "s".repeat(32) }]) {
      expect(() => parseConfig(source)).toThrow(ConfigError);
      expect(() => parseConfig(source)).toThrow(/AUTH_AUDIENCE is required with AUTH_(JWKS_URL|PUBLIC_KEY|HS256_SECRET)/);
    }
    const { code, output } = await failedStart({ AUTH_JWKS_URL: "https://idp.example/jwks", AUTH_ISSUER: "https://idp.example/" });
    expect(code).toBe(1);
    expect(output).toMatch(/AUTH_AUDIENCE is required with AUTH_JWKS_URL: set it to the audience your identity provider writes/);
  }, 60_000);
});
