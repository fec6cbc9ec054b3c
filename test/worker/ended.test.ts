import { env } from "cloudflare:workers";
import { decodeJwt, } from "jose";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { describe, expect, it, vi } from "vitest";
import { call, signIn } from "./support";

// Ended stays ended in the Worker (issue 24), in the isolate that ends a session or removes a
// sign-in method. This project's files share one isolate; a new isolate meeting what others
// left in D1 is tested on the deployed bundle, in a workerd of its own (test/worker-bundle.test.ts).

const ORIGIN = "https://worker.test";
const json = { "Content-Type": "application/json" };
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function walletSession() {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST" })).json()) as { nonce: string };
  const message = createSiweMessage({ domain: "worker.test", address: wallet.address, uri: `${ORIGIN}/`, version: "1", chainId: 1, nonce });
  const res = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }) });
  expect(res.status).toBe(200);
  const cookie = /refresh_token=([^;]*)/.exec(res.headers.get("Set-Cookie") ?? "")![1]!;
  return { wallet, cookie, ...((await res.json()) as { accessToken: string; user: { id: string } }) };
}

describe("in the isolate that ends it", () => {
  it("refuses an ended session's token at once: signed out, signed out everywhere, or a reused refresh token", async () => {
    const out = await walletSession();
    const logout = await call("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${out.cookie}`, Origin: ORIGIN } });
    expect(logout.status).toBe(204);
    expect((await call("/me", { headers: bearer(out.accessToken) })).status).toBe(401);

    const reused = await walletSession();
    const refresh = (cookie: string) => call("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: ORIGIN } });
    // The owner refreshes twice; a copy of the first token then comes back (a token whose
    // replacement was used has no grace period).
    const next = /refresh_token=([^;]*)/.exec((await refresh(reused.cookie)).headers.get("Set-Cookie") ?? "")![1]!;
    expect((await refresh(next)).status).toBe(200);
    expect((await refresh(reused.cookie)).status).toBe(401);
    expect((await call("/keys", { method: "POST", headers: { ...bearer(reused.accessToken), ...json }, body: "{}" })).status).toBe(401);

    // A second session of the same wallet signs the first out.
    const first = await walletSession();
    const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST" })).json()) as { nonce: string };
    const message = createSiweMessage({ domain: "worker.test", address: first.wallet.address, uri: `${ORIGIN}/`, version: "1", chainId: 1, nonce });
    const second = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ wallet: { message, signature: await first.wallet.signMessage({ message }) } }) });
    const { accessToken } = (await second.json()) as { accessToken: string };
    expect(await (await call("/me/sessions", { method: "DELETE", headers: bearer(accessToken) })).json()).toEqual({ ended: 1 });
    expect((await call("/me", { headers: bearer(first.accessToken) })).status).toBe(401);
    expect((await call("/me", { headers: bearer(accessToken) })).status).toBe(200);
  });

  it("refuses a removed sign-in method's bearer token", async () => {
    const provider = await signIn("founder-here");
    const token = provider.Authorization!.slice("Bearer ".length);
    const session = await call("/auth/session", { method: "POST", headers: json, body: JSON.stringify({ accessToken: token }) });
    const { accessToken } = (await session.json()) as { accessToken: string };
    const wallet = privateKeyToAccount(generatePrivateKey());
    const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST" })).json()) as { nonce: string };
    const message = createSiweMessage({ domain: "worker.test", address: wallet.address, uri: `${ORIGIN}/`, version: "1", chainId: 1, nonce });
    const added = await call("/me/identities", {
      method: "POST",
      headers: { ...bearer(accessToken), ...json },
      body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }),
    });
    expect(added.status).toBe(201);
    const me = (await (await call("/me", { headers: bearer(accessToken) })).json()) as { identities: Array<{ id: string; subject: string }> };
    const founder = me.identities.find((m) => m.subject === "user:founder-here")!;
    expect((await call(`/me/identities/${founder.id}`, { method: "DELETE", headers: bearer(accessToken) })).status).toBe(204);
    expect((await call("/plants", { headers: provider })).status).toBe(401);
  });
});

describe("another isolate", () => {
  it("refuses, within 30 s, a session ended elsewhere after this isolate read the ended sessions; its refresh at once", async () => {
    const session = await walletSession();
    expect((await call("/me", { headers: bearer(session.accessToken) })).status).toBe(200);
    // Another isolate ends it: the row it writes, and the session gone.
    const { sid } = decodeJwt(session.accessToken) as { sid: string };
    const now = Date.now();
    await env.DB.batch([
      env.DB.prepare("insert into ended_sessions (session_id, user_id, reason, ended_at, tokens_expire_at) values (?, ?, 'signed-out', ?, ?)").bind(sid, session.user.id, now, now + 15 * 60_000 + 5000),
      env.DB.prepare("delete from sessions where id = ?").bind(sid),
    ]);
    const refresh = await call("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${session.cookie}`, Origin: ORIGIN } });
    expect(refresh.status).toBe(401);
    vi.useFakeTimers({ toFake: ["Date"], now: now + 31_000 });
    try {
      const res = await call("/me", { headers: bearer(session.accessToken) });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { message: string }).message).toMatch(/session has ended/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("sign-ups in the Worker", () => {
  it("admits SIGN_UPS_PER_ADDRESS_PER_HOUR new wallets from one address, counted in D1, then 429 sign_up_limited", async () => {
    const from = { "CF-Connecting-IP": "198.51.100.7" };
    const attempt = async () => {
      const wallet = privateKeyToAccount(generatePrivateKey());
      const { nonce } = (await (await call("/auth/wallet/nonce", { method: "POST", headers: from })).json()) as { nonce: string };
      const message = createSiweMessage({ domain: "worker.test", address: wallet.address, uri: `${ORIGIN}/`, version: "1", chainId: 1, nonce });
      return call("/auth/session", { method: "POST", headers: { ...json, ...from }, body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }) });
    };
    for (let i = 0; i < 5; i++) expect((await attempt()).status).toBe(200);
    const refused = await attempt();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { code: string }).code).toBe("sign_up_limited");
  });
});
