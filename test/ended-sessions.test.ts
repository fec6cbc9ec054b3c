import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { decodeJwt } from "jose";
import { createSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { parseConfig } from "../src/platform/config";
import { createNodeDeps } from "../src/platform/node/node-deps";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";
import { startIdentityProvider, type IdentityProvider } from "./support/identity-provider";
import { startServerProcess, type ServerProcess } from "./support/server-process";
import { HARNESS_ORIGIN, newWallet, postWalletProof, siweMessage } from "./support/wallet";
import { BUILT_DATABASE_THREAD } from "./support/build-server";

// Ended stays ended (issue 24): a session that was signed out, ended from another device or
// ended by a reused refresh token, and a sign-in method removed from its account, never
// work again: not after the server restarts, and not after any number of other sessions
// end. The attacks: a victim's stolen access token, signed out, answered 200 again after
// 10,000 other sessions ended (an in-memory list evicted it) or after a restart; a removed
// identity's token reached its old account again after a restart.

const json = { "Content-Type": "application/json" };
type Session = { accessToken: string; user: { id: string } };
/**
 * The restarted server listens on another port; its public origin (which sessions' tokens
 * name, and wallet messages) stays the same, as a deployment's does.
 */
const SAME_ORIGIN = { PUBLIC_BASE_URL: "http://localhost:8787" };
const cookieOf = (res: Response) => /refresh_token=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? "";

/** What a stolen access token can still do: read the account, mint a lasting API key. */
async function expectRefused(url: string, token: string) {
  const auth = { Authorization: `Bearer ${token}` };
  await expectError(await fetch(`${url}/me`, { headers: auth }), 401, /session has ended/);
  await expectError(await fetch(`${url}/keys`, { method: "POST", headers: { ...auth, ...json }, body: "{}" }), 401, /session has ended/);
}

describe("a session that ended, on the real server", () => {
  it("stays refused after the server restarts: signed out, ended from another device, ended by a reused refresh token", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ended-sessions-"));
    let server: ServerProcess = await startServerProcess(SAME_ORIGIN, { dataDir });
    try {
      const signIn = async (name: string) => {
        const res = await fetch(`${server.url}/auth/session`, { method: "POST", headers: json, body: JSON.stringify({ local: { name } }) });
        expect(res.status, await res.clone().text()).toBe(200);
        return { token: ((await res.json()) as Session).accessToken, cookie: cookieOf(res) };
      };
      const cookieCall = (path: string, cookie: string) =>
        fetch(`${server.url}${path}`, { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: SAME_ORIGIN.PUBLIC_BASE_URL } });

      const signedOut = await signIn("victim");
      expect((await cookieCall("/auth/logout", signedOut.cookie)).status).toBe(204);
      const elsewhere = await signIn("victim");
      const kept = await signIn("victim");
      const everywhere = await fetch(`${server.url}/me/sessions`, { method: "DELETE", headers: { Authorization: `Bearer ${kept.token}` } });
      expect(await everywhere.json()).toEqual({ ended: 1 });
      // The owner refreshes twice; a copy of their first refresh token then comes back (this
      // server's clock is real: a token whose replacement was used has no grace period).
      const stolen = await signIn("victim2");
      const next = cookieOf(await cookieCall("/auth/refresh", stolen.cookie));
      expect((await cookieCall("/auth/refresh", next)).status).toBe(200);
      await expectError(await cookieCall("/auth/refresh", stolen.cookie), 401, /used twice/, "refresh_token_reused");

      for (const ended of [signedOut, elsewhere, stolen]) await expectRefused(server.url, ended.token);
      await server.close();

      server = await startServerProcess(SAME_ORIGIN, { dataDir });
      for (const ended of [signedOut, elsewhere, stolen]) await expectRefused(server.url, ended.token);
      // What did not end goes on.
      expect((await fetch(`${server.url}/me`, { headers: { Authorization: `Bearer ${kept.token}` } })).status).toBe(200);
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("keeps a removed sign-in method's tokens away from its old account after the server restarts", async () => {
    const idp: IdentityProvider = await startIdentityProvider();
    const env = { ...SAME_ORIGIN, AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience };
    const dataDir = mkdtempSync(join(tmpdir(), "removed-method-"));
    let server = await startServerProcess(env, { dataDir });
    try {
      const provider = await idp.sign("user:founder", { name: "Founder" });
      const res = await fetch(`${server.url}/auth/session`, { method: "POST", headers: json, body: JSON.stringify({ accessToken: provider }) });
      const session = (await res.json()) as Session;
      const auth = { Authorization: `Bearer ${session.accessToken}` };
      expect((await fetch(`${server.url}/plants`, { method: "POST", headers: { ...auth, ...json }, body: '{"id":1,"name":"Fern"}' })).status).toBe(200);

      // A wallet joins the account, then the provider's identity (which made it) is removed.
      const wallet = newWallet();
      const { nonce } = (await (await fetch(`${server.url}/auth/wallet/nonce`, { method: "POST" })).json()) as { nonce: string };
      const origin = new URL(SAME_ORIGIN.PUBLIC_BASE_URL);
      const message = createSiweMessage({ domain: origin.host, address: wallet.address, uri: `${origin.origin}/`, version: "1", chainId: 1, nonce });
      const linked = await fetch(`${server.url}/me/identities`, {
        method: "POST",
        headers: { ...auth, ...json },
        body: JSON.stringify({ wallet: { message, signature: await wallet.signMessage({ message }) } }),
      });
      expect(linked.status).toBe(201);
      const me = (await (await fetch(`${server.url}/me`, { headers: auth })).json()) as { identities: Array<{ id: string; subject: string }> };
      const founder = me.identities.find((m) => m.subject === "user:founder")!;
      expect((await fetch(`${server.url}/me/identities/${founder.id}`, { method: "DELETE", headers: auth })).status).toBe(204);

      const asProvider = { Authorization: `Bearer ${provider}` };
      await expectError(await fetch(`${server.url}/plants`, { headers: asProvider }), 401, /removed from its account/);
      await server.close();

      server = await startServerProcess(env, { dataDir });
      await expectError(await fetch(`${server.url}/plants`, { headers: asProvider }), 401, /removed from its account/);
      // The account, through the wallet and the session, is untouched.
      expect(await (await fetch(`${server.url}/plants`, { headers: auth })).json()).toEqual([{ name: "Fern" }]);
    } finally {
      await server.close();
      await idp.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("a session that ended, among many others", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const signInWith = async (name: string) => {
    const res = await h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn(name) } });
    expect(res.status).toBe(200);
    return { session: (await res.json()) as Session, cookie: cookieOf(res) };
  };

  it("stays refused however many other sessions end after it (100,000), and in a new process over the same database", async () => {
    const victim = await signInWith("many-victim");
    const out = await h.request("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${victim.cookie}`, Origin: HARNESS_ORIGIN } });
    expect(out.status).toBe(204);
    await expectError(await h.request("/me", { token: victim.session.accessToken }), 401, /session has ended/);

    // The attacker's own account, with 100,000 sessions (written directly: signing in is
    // limited), all ended at once by "sign out everywhere".
    const attacker = await signInWith("many-attacker");
    const userId = attacker.session.user.id;
    const at = h.clock.now().getTime();
    await h.db.run(sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 100000)
      insert into sessions (id, user_id, method, identity_id, device, created_at, last_used_at, access_expires_at)
      select 'ses_many_' || i, ${userId}, 'provider', null, 'script', ${at}, ${at}, ${at + 900_000} from n`);
    const ended = await h.request("/me/sessions", { method: "DELETE", token: attacker.session.accessToken });
    expect(await ended.json()).toEqual({ ended: 100_000 });

    await expectError(await h.request("/me", { token: victim.session.accessToken }), 401, /session has ended/);
    await expectError(await h.request("/keys", { method: "POST", token: victim.session.accessToken, json: {} }), 401);

    // Another process (a restart, another instance) over the same database refuses it too.
    const config = parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: h.idp.issuer, AUTH_AUDIENCE: h.idp.audience, LOG_LEVEL: "error" });
    const other = await createNodeDeps(config, { databaseUrl: `file:${h.dbFile}`, builtDatabaseThread: BUILT_DATABASE_THREAD, now: h.clock.now });
    try {
      const app = createApp(() => other.deps);
      const res = await app.request("/me", { headers: { Authorization: `Bearer ${victim.session.accessToken}` } });
      await expectError(res, 401, /session has ended/);
      expect((await app.request("/me", { headers: { Authorization: `Bearer ${attacker.session.accessToken}` } })).status).toBe(200);
    } finally {
      other.client.close();
    }
  }, 60_000);

  it("costs a live session's request no database round trip to know it has not ended", async () => {
    const { session } = await signInWith("round-trips");
    const before = h.roundTrips();
    expect((await h.request("/plants", { token: session.accessToken })).status).toBe(200);
    expect(h.roundTrips() - before).toBe(1); // the plants' own query
  });

  it("keeps an ended session's row until its last access token has expired, then the daily job lets it go", async () => {
    const { cookie } = await signInWith("expiry-victim");
    h.clock.advance(60_000);
    const refreshed = await h.request("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: HARNESS_ORIGIN } });
    const renewed = (await refreshed.json()) as Session;
    await h.request("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${cookieOf(refreshed)}`, Origin: HARNESS_ORIGIN } });
    const [row] = await h.db.all<{ tokens_expire_at: number }>(sql`select tokens_expire_at from ended_sessions where user_id = ${renewed.user.id}`);
    const exp = decodeJwt(renewed.accessToken).exp! * 1000;
    expect(row!.tokens_expire_at).toBeGreaterThan(exp);
    try {
      h.clock.set(new Date(row!.tokens_expire_at - 1));
      await expectError(await h.request("/me", { token: renewed.accessToken }), 401, /expired/);
      const rows = async () => (await h.db.all(sql`select 1 from ended_sessions where user_id = ${renewed.user.id}`)).length;
      await runDailyRollover(h.deps, { scheduledTime: h.clock.now() });
      expect(await rows()).toBe(1);
      await runDailyRollover(h.deps, { scheduledTime: new Date(row!.tokens_expire_at) });
      expect(await rows()).toBe(0);
    } finally {
      h.clock.set("2026-11-22T12:00:00.000Z");
    }
  });

  it("ends the least recently used session when a person would hold more than SESSIONS_PER_USER", async () => {
    const few = await createHarness({ env: { SESSIONS_PER_USER: "2" } });
    try {
      const wallet = newWallet();
      const signIn = async () => {
        const message = await siweMessage(few, wallet.address);
        const res = await postWalletProof(few, message, await wallet.signMessage({ message }));
        expect(res.status).toBe(200);
        return { session: (await res.json()) as Session, cookie: cookieOf(res) };
      };
      const first = await signIn();
      few.clock.advance(1000);
      const second = await signIn();
      few.clock.advance(1000);
      const third = await signIn();
      await expectError(await few.request("/me", { token: first.session.accessToken }), 401, /session has ended/);
      const refresh = await few.request("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${first.cookie}`, Origin: HARNESS_ORIGIN } });
      await expectError(refresh, 401, /session has ended/, "refresh_token_invalid");
      for (const live of [second, third]) expect((await few.request("/me", { token: live.session.accessToken })).status).toBe(200);
      const list = (await (await few.request("/me/sessions", { token: third.session.accessToken })).json()) as { items: unknown[] };
      expect(list.items).toHaveLength(2);
    } finally {
      await few.close();
    }
  });
});
