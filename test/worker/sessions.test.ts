import { decodeJwt } from "jose";
import { describe, expect, it, vi } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { REFRESH_GRACE_MS } from "../../src/features/sign-in/sessions";
import { call, signIn } from "./support";

// Sessions in the real Worker over D1: a wallet signs a real EIP-4361 message (viem, in
// workerd), the Worker verifies it with the bundle's own secp256k1 and Keccak, and its
// session rotates, forgives a lost refresh reply once and ends as on Node. The Worker's
// public origin is its request URL's.

const ORIGIN = "https://worker.test";
const json = { "Content-Type": "application/json" };

async function walletSession() {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST" })).json()) as { nonce: string };
  const message = createSiweMessage({ domain: "worker.test", address: wallet.address, uri: `${ORIGIN}/`, version: "1", chainId: 1, nonce, statement: "Sign in." });
  const res = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }) });
  return { wallet, message, res };
}

const cookieOf = (res: Response) => /refresh_token=([^;]*)/.exec(res.headers.get("Set-Cookie") ?? "")?.[1];
const refresh = (token: string, origin?: string) =>
  call("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${token}`, ...(origin ? { Origin: origin } : {}) } });

describe("sessions on the Worker", () => {
  it("signs a wallet in, and the session's access token works like any bearer token", async () => {
    const { wallet, res } = await walletSession();
    expect(res.status).toBe(200);
    const set = res.headers.get("Set-Cookie")!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).toMatch(/Path=\/auth/);
    expect(set).toMatch(/Secure/); // https://worker.test
    const { accessToken } = (await res.json()) as { accessToken: string };
    const auth = { Authorization: `Bearer ${accessToken}` };
    expect((await call("/plants", { method: "POST", headers: { ...auth, ...json }, body: '{"id":1,"name":"Fern"}' })).status).toBe(200);
    const me = (await (await call("/me", { headers: auth })).json()) as { identity: { issuer: string; subject: string } };
    expect(me.identity).toMatchObject({ issuer: "eip155", subject: wallet.address });
  });

  it("refuses a replayed message and a message for another origin, with 401", async () => {
    const { wallet, message, res } = await walletSession();
    expect(res.status).toBe(200);
    const again = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }) });
    expect(again.status).toBe(401);
    expect(((await again.json()) as { code: string }).code).toBe("wallet_nonce_used");
    const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST" })).json()) as { nonce: string };
    const foreign = createSiweMessage({ domain: "evil.example", address: wallet.address, uri: "https://evil.example/", version: "1", chainId: 1, nonce });
    const refused = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ wallet: { message: foreign, signature: await wallet.signMessage({ message: foreign }) } }) });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("wallet_domain_mismatch");
  });

  it("rotates the refresh token, ends the session on reuse, and needs the Worker's own origin", async () => {
    const { res } = await walletSession();
    const first = cookieOf(res)!;
    expect((await refresh(first)).status).toBe(403);
    const now = Date.now();
    const rotated = await refresh(first, ORIGIN);
    expect(rotated.status).toBe(200);
    const second = cookieOf(rotated)!;
    expect(second).not.toBe(first);
    // Past the grace period for a lost reply, the first token is a stolen copy.
    vi.useFakeTimers({ toFake: ["Date"], now: now + REFRESH_GRACE_MS + 1_000 });
    try {
      const reused = await refresh(first, ORIGIN);
      expect(reused.status).toBe(401);
      expect(((await reused.json()) as { code: string }).code).toBe("refresh_token_reused");
      expect((await refresh(second, ORIGIN)).status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
  });

  it("answers a token whose refresh reply was lost once more within the grace period, in D1, and the session goes on", async () => {
    const { res } = await walletSession();
    const { accessToken: signedIn } = (await res.json()) as { accessToken: string };
    const first = cookieOf(res)!;
    const now = Date.now();
    expect((await refresh(first, ORIGIN)).status).toBe(200); // its reply lost on the way
    vi.useFakeTimers({ toFake: ["Date"], now: now + REFRESH_GRACE_MS - 5_000 });
    try {
      const graced = await refresh(first, ORIGIN);
      expect(graced.status, await graced.clone().text()).toBe(200);
      const { accessToken } = (await graced.json()) as { accessToken: string };
      expect(decodeJwt(accessToken).sid).toBe(decodeJwt(signedIn).sid);
      expect((await call("/me", { headers: { Authorization: `Bearer ${accessToken}` } })).status).toBe(200);
      const next = await refresh(cookieOf(graced)!, ORIGIN);
      expect(next.status).toBe(200);

      // Once only: the same token again is a reuse, and the session ends.
      const again = await refresh(first, ORIGIN);
      expect(again.status).toBe(401);
      expect(((await again.json()) as { code: string }).code).toBe("refresh_token_reused");
      expect((await refresh(cookieOf(next)!, ORIGIN)).status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
  });

  it("serves its session keys, and takes the identity provider's token for a session", async () => {
    const jwks = (await (await call("/.well-known/jwks.json")).json()) as { keys: Array<{ kid: string; alg: string }> };
    expect(jwks.keys).toEqual([expect.objectContaining({ kid: "worker-test-session", alg: "ES256", kty: "EC", crv: "P-256" })]);
    const provider = (await signIn("provider-person")).Authorization!.slice("Bearer ".length);
    const res = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ accessToken: provider }) });
    expect(res.status).toBe(200);
    const config = (await (await call("/client-config")).json()) as { signIn: { methods: Array<{ method: string }> } };
    expect(config.signIn.methods.map((m) => m.method)).toEqual(["wallet", "provider-token"]);
  });
});
