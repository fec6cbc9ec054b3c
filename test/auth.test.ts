import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportSPKI, generateKeyPair, SignJWT, exportJWK, base64url } from "jose";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { ConfigError, parseConfig } from "../src/platform/config";
import { createJwtVerifier, InvalidTokenError } from "../src/platform/auth/jwt";
import { LOCAL_AUDIENCE, LOCAL_ISSUER, signLocalToken } from "../src/platform/auth/local-login";
import { loadOrCreateLocalKey } from "../src/platform/node/local-login-key";
import { createHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function expect401(token: string | undefined, pattern: RegExp, headers: Record<string, string> = {}) {
  const res = await h.request("/plants", { token, headers });
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
  const body = (await res.json()) as { error: number; message: string };
  expect(body.error).toBe(401);
  expect(body.message).toMatch(pattern);
  if (token) expect(body.message).not.toContain(token);
}

const encode = (value: object) => base64url.encode(JSON.stringify(value));
const claims = () => ({
  iss: h.idp.issuer,
  aud: h.idp.audience,
  sub: "user:mallory",
  exp: Math.floor(Date.now() / 1000) + 3600,
});

describe("JWT authentication", () => {
  it("accepts a token signed by the identity provider's key", async () => {
    expect((await h.request("/plants", { token: await h.signIn("alice") })).status).toBe(200);
  });

  it("asks for credentials when none are sent", async () => {
    await expect401(undefined, /authentication required/);
  });

  it("refuses a malformed Authorization header", async () => {
    await expect401(undefined, /Bearer <token>/, { Authorization: "Basic abc" });
  });

  it("tells a client whose token was refused that it is invalid (RFC 6750)", async () => {
    const res = await h.request("/plants", { token: "garbage" });
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api", error="invalid_token"');
    expect((await h.request("/plants")).headers.get("www-authenticate")).toBe('Bearer realm="api"');
  });

  it("refuses garbage", async () => {
    await expect401("not.a.jwt", /malformed or invalid/);
    await expect401("garbage", /malformed or invalid/);
  });

  it("refuses alg none", async () => {
    const token = `${encode({ alg: "none", typ: "JWT" })}.${encode(claims())}.`;
    await expect401(token, /algorithm|malformed/);
  });

  it("refuses HS256 signed with the provider's public key as the secret", async () => {
    for (const secret of [JSON.stringify(h.idp.publicJwk), h.idp.publicJwk.x!]) {
      const token = await new SignJWT(claims())
        .setProtectedHeader({ alg: "HS256", kid: "test-key-1" })
        .sign(new TextEncoder().encode(secret));
      await expect401(token, /algorithm this service does not accept/);
    }
  });

  it("refuses a token signed by a foreign key under the trusted kid", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).sign(privateKey);
    await expect401(token, /signature is invalid/);
  });

  it("refuses a token whose kid the provider does not publish", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: "ES256", kid: "other" }).sign(privateKey);
    await expect401(token, /key this service does not trust/);
  });

  it("refuses an expired token", async () => {
    await expect401(await h.idp.sign("user:x", {}, { expiresIn: Math.floor(Date.now() / 1000) - 60 }), /expired/);
  });

  it("refuses a token that is not valid yet", async () => {
    const token = await new SignJWT({ ...claims(), nbf: Math.floor(Date.now() / 1000) + 600 })
      .setProtectedHeader({ alg: "ES256", kid: "test-key-1" })
      .sign(h.idp.privateKey);
    await expect401(token, /not valid yet/);
  });

  it("refuses a wrong issuer and a wrong audience", async () => {
    const sign = (c: object) =>
      new SignJWT({ ...claims(), ...c }).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).sign(h.idp.privateKey);
    await expect401(await sign({ iss: "https://evil.example/" }), /untrusted issuer/);
    await expect401(await sign({ aud: "someone-else" }), /another audience/);
  });

  it("refuses a token without exp, and one without sub", async () => {
    const { exp: _exp, ...noExp } = claims();
    const { sub: _sub, ...noSub } = claims();
    const sign = (c: object) => new SignJWT(c as never).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).sign(h.idp.privateKey);
    await expect401(await sign(noExp), /"exp" claim/);
    await expect401(await sign(noSub), /"sub" claim/);
  });

  it.each([
    ["an object", { a: 1 }],
    ["an array", ["x"]],
    ["a number", 12345],
    ["a boolean", true],
    ["empty", ""],
  ])("refuses a token whose sub is %s", async (_label, sub) => {
    const token = await new SignJWT({ ...claims(), sub } as never).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).sign(h.idp.privateKey);
    await expect401(token, /"sub" claim must be a non-empty string/);
  });

  it("fetches the JWKS once and serves many requests from its cache", async () => {
    const before = h.idp.jwksHits();
    const token = await h.signIn("cache");
    for (let i = 0; i < 5; i++) expect((await h.request("/plants", { token })).status).toBe(200);
    expect(h.idp.jwksHits() - before).toBe(0);
    expect(h.idp.jwksHits()).toBeLessThanOrEqual(1);
  });

  it("stops accepting a token it has verified once the token expires", async () => {
    const token = await h.idp.sign("user:short-lived", {}, { expiresIn: "60s" });
    expect((await h.request("/plants", { token })).status).toBe(200);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 120_000 });
    try {
      await expect401(token, /expired/);
    } finally {
      vi.useRealTimers();
    }
  });

  it("never logs the token", async () => {
    const token = await h.idp.sign("user:x", {}, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
    await h.request("/plants", { token });
    expect(h.logs.text()).not.toContain(token);
  });
});

describe("other key sources", () => {
  it("verifies with a PEM public key and pins its algorithm", async () => {
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    const verify = await createJwtVerifier({ source: { kind: "public-key", key: await exportSPKI(publicKey) }, audience: "api" });
    const good = await new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setSubject("a").setAudience("api").setExpirationTime("1h").sign(privateKey);
    expect((await verify(good)).subject).toBe("a");
    const pem = await exportSPKI(publicKey);
    const confused = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("a").setAudience("api").setExpirationTime("1h").sign(new TextEncoder().encode(pem));
    await expect(verify(confused)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it("verifies with a JWK public key given as JSON", async () => {
    const { privateKey, publicKey } = await generateKeyPair("EdDSA");
    const verify = await createJwtVerifier({ source: { kind: "public-key", key: JSON.stringify(await exportJWK(publicKey)) }, audience: "api" });
    const token = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA" }).setSubject("b").setAudience("api").setExpirationTime("1h").sign(privateKey);
    expect((await verify(token)).subject).toBe("b");
  });

  it("verifies HS256 with a shared secret and nothing else", async () => {
    const secret = "s".repeat(40);
    const verify = await createJwtVerifier({ source: { kind: "hs256", secret }, audience: "api" });
    const token = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("c").setAudience("api").setExpirationTime("1h").sign(new TextEncoder().encode(secret));
    expect((await verify(token)).subject).toBe("c");
    const { privateKey } = await generateKeyPair("ES256");
    const es = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("c").setAudience("api").setExpirationTime("1h").sign(privateKey);
    await expect(verify(es)).rejects.toThrow(/algorithm/);
  });

  it("trusts local-login tokens signed by the key in the data folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "local-login-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const key = await loadOrCreateLocalKey(join(dir, "key.json"));
    const verify = await createJwtVerifier({ source: { kind: "jwk", jwk: key.publicJwk }, issuer: LOCAL_ISSUER, audience: LOCAL_AUDIENCE });
    const identity = await verify((await signLocalToken(key, "alice")).token);
    expect(identity).toMatchObject({ issuer: LOCAL_ISSUER, subject: "local:alice", name: "alice" });
  });

  it("keeps identity details the token offers", async () => {
    const verify = await createJwtVerifier({ source: { kind: "jwks", url: h.idp.jwksUrl }, audience: h.idp.audience });
    const token = await h.idp.sign("did:privy:123", { email: "a@example.com", wallet_address: "0xabc0000000000000000000000000000000000def" });
    expect(await verify(token)).toMatchObject({ subject: "did:privy:123", email: "a@example.com", wallet: "0xabc0000000000000000000000000000000000def" });
  });
});

describe("configuration", () => {
  it("names the variable that is wrong", () => {
    expect(() => parseConfig({ DAILY_CREDITS: "lots" })).toThrow(/DAILY_CREDITS/);
    expect(() => parseConfig({ AUTH_JWKS_URL: "not a url" })).toThrow(/AUTH_JWKS_URL/);
    expect(() => parseConfig({ AUTH_HS256_SECRET: "short" })).toThrow(/AUTH_HS256_SECRET.*32/);
    expect(() => parseConfig({ LOG_LEVEL: "loud" })).toThrow(ConfigError);
  });

  it("refuses two identity sources at once", () => {
    expect(() => parseConfig({ AUTH_JWKS_URL: "https://idp.example/jwks", AUTH_HS256_SECRET: "x".repeat(32) })).toThrow(/only one/);
  });

  it("applies the documented defaults", () => {
    expect(parseConfig({})).toMatchObject({ PORT: 8787, DAILY_CREDITS: 500, MODEL_TIMEOUT_MS: 60000, SVC_MODEL_UPSTREAM: "llama-3.3-70b", LOG_LEVEL: "info" });
  });
});
