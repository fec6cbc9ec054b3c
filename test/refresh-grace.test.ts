import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { REFRESH_GRACE_MS } from "../src/features/sign-in/sessions";
import { parseConfig } from "../src/platform/config";
import { createRuntime } from "../src/platform/deps";
import { expectError } from "./support/expect-error";
import { createHarness, openDatabaseFile, type Harness } from "./support/harness";
import { HARNESS_ORIGIN } from "./support/wallet";

// A refresh whose reply never arrived (a reload or a page left mid-refresh, a phone losing
// signal) leaves the browser with the refresh token the server has just replaced. Presented
// again within REFRESH_GRACE_MS, it is answered once more as a normal refresh, and the token
// the lost reply carried is replaced in turn; otherwise a replaced token is a stolen copy and
// ends the session, as before: after the window, a second time, or once the token that
// replaced it has been used.

const START = "2026-11-22T12:00:00.000Z";
let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { ADMINS: "boss@example.com" } });
});
afterAll(() => h.close());

type Session = { accessToken: string; user: { id: string } };

const cookieOf = (res: Response) => /refresh_token=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")?.[1] ?? "";

async function signIn(name: string) {
  const res = await h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn(name) } });
  expect(res.status, await res.clone().text()).toBe(200);
  return { session: (await res.json()) as Session, cookie: cookieOf(res) };
}

const refresh = (cookie: string, target: Pick<Harness, "request"> = h) =>
  target.request("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: HARNESS_ORIGIN } });

/** A refresh that succeeds: its new refresh token and access token. */
async function refreshed(cookie: string, target: Pick<Harness, "request"> = h) {
  const res = await refresh(cookie, target);
  expect(res.status, await res.clone().text()).toBe(200);
  return { cookie: cookieOf(res), session: (await res.json()) as Session };
}

/** A refresh whose reply is lost on its way: the server handled it, the browser never saw it. */
const lost = async (cookie: string) => void (await refreshed(cookie));

const sessionOf = (accessToken: string) => (decodeJwt(accessToken) as { sid: string }).sid;

/** Runs `steps` with the clock where they leave it, then puts it back. */
async function withClock(steps: () => Promise<void>) {
  try {
    await steps();
  } finally {
    h.clock.set(START);
  }
}

describe("a refresh token presented again within the grace period", () => {
  it("is answered as a normal refresh, in one round trip, and the session goes on", async () => {
    const { session, cookie: first } = await signIn("reloader");
    await withClock(async () => {
      await lost(first);
      h.clock.advance(REFRESH_GRACE_MS - 1_000);
      const before = h.roundTrips();
      const res = await refresh(first);
      expect(h.roundTrips() - before).toBe(1);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(res.headers.get("set-cookie")).toMatch(/^refresh_token=rt_[A-Za-z0-9_-]{43}; Max-Age=2592000; Path=\/auth; HttpOnly; SameSite=Strict$/);
      const renewed = (await res.json()) as Session;
      // The same session, with a new access token that works.
      expect(renewed.user.id).toBe(session.user.id);
      expect(sessionOf(renewed.accessToken)).toBe(sessionOf(session.accessToken));
      expect((await h.request("/me", { token: renewed.accessToken })).status).toBe(200);
      expect(h.logs.lines).toContainEqual(expect.objectContaining({ level: "info", msg: expect.stringMatching(/grace period/), fields: { sessionId: sessionOf(session.accessToken) } }));

      // Its refresh token rotates like any other, long after the window.
      h.clock.advance(10 * 60_000);
      const next = await refreshed(cookieOf(res));
      expect((await h.request("/me", { token: next.session.accessToken })).status).toBe(200);
      const devices = (await (await h.request("/me/sessions", { token: next.session.accessToken })).json()) as { items: unknown[] };
      expect(devices.items).toHaveLength(1);
    });
  });

  it("is the session's end once the window has passed: a reuse", async () => {
    const { session, cookie: first } = await signIn("late");
    await withClock(async () => {
      const { cookie: second } = await refreshed(first);
      h.clock.advance(REFRESH_GRACE_MS);
      await expectError(await refresh(first), 401, /used twice, .*session was ended to protect the account/, "refresh_token_reused");
      await expectError(await refresh(second), 401, /the session has ended/, "refresh_token_invalid");
      await expectError(await h.request("/me", { token: session.accessToken }), 401, /session has ended/);
    });
  });

  it("replaces the token the lost reply carried: presented afterwards, it is a reuse and ends the session", async () => {
    const { cookie: first } = await signIn("two-holders");
    await withClock(async () => {
      const { cookie: carried } = await refreshed(first); // in a thief's hands, say
      h.clock.advance(5_000);
      const graced = await refreshed(first);
      await expectError(await refresh(carried), 401, /used twice/, "refresh_token_reused");
      await expectError(await refresh(graced.cookie), 401, /the session has ended/, "refresh_token_invalid");
      await expectError(await h.request("/me", { token: graced.session.accessToken }), 401, /session has ended/);
    });
  });

  it("is answered once: a second time within the window is a reuse", async () => {
    const { cookie: first } = await signIn("twice");
    await withClock(async () => {
      await lost(first);
      h.clock.advance(1_000);
      const graced = await refreshed(first);
      h.clock.advance(1_000);
      await expectError(await refresh(first), 401, /used twice/, "refresh_token_reused");
      await expectError(await refresh(graced.cookie), 401, /the session has ended/, "refresh_token_invalid");
    });
  });

  it("is a reuse once the token that replaced it has been used: whoever holds the old one is not the session's holder", async () => {
    const { cookie: first } = await signIn("moved-on");
    await withClock(async () => {
      const { cookie: second } = await refreshed(first);
      const { cookie: third } = await refreshed(second);
      h.clock.advance(1_000);
      await expectError(await refresh(first), 401, /used twice/, "refresh_token_reused");
      await expectError(await refresh(third), 401, /the session has ended/, "refresh_token_invalid");
    });
  });

  it("is refused when the session ended meanwhile: signed out, ended from another device, suspended", async () => {
    await withClock(async () => {
      const out = await signIn("signs-out");
      const { cookie: outNext } = await refreshed(out.cookie);
      expect((await h.request("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${outNext}`, Origin: HARNESS_ORIGIN } })).status).toBe(204);

      const device = await signIn("many-devices");
      await lost(device.cookie);
      const other = await signIn("many-devices");
      expect(await (await h.request("/me/sessions", { method: "DELETE", token: other.session.accessToken })).json()).toEqual({ ended: 1 });

      const suspended = await signIn("suspended");
      await lost(suspended.cookie);
      const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
      expect((await h.request(`/admin/users/${suspended.session.user.id}/suspend`, { method: "POST", token: boss, json: { reason: "spam" } })).status).toBe(204);

      h.clock.advance(1_000);
      for (const ended of [out, device, suspended]) {
        await expectError(await refresh(ended.cookie), 401, /the session has ended/, "refresh_token_invalid");
      }
      expect((await refresh(other.cookie)).status).toBe(200);
    });
  });

  it("gets the same answer from another process over the same database (a restart)", async () => {
    const { cookie: first } = await signIn("restarted");
    const other = await openDatabaseFile(h.dbFile);
    await withClock(async () => {
      await lost(first);
      h.clock.advance(2_000);
      const runtime = await createRuntime(parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: h.idp.issuer, AUTH_AUDIENCE: h.idp.audience, LOG_LEVEL: "error" }), { now: h.clock.now });
      // The same signing key, as a restarted deployment has; nothing else of this process.
      const app = createApp(() => ({ ...runtime, db: other.db, sessionTokens: h.deps.sessionTokens }));
      const restarted = { request: async (path: string, init?: RequestInit) => app.request(path, init) };
      const graced = await refreshed(first, restarted);
      await expectError(await refresh(first, restarted), 401, /used twice/, "refresh_token_reused");
      await expectError(await refresh(graced.cookie), 401, /the session has ended/, "refresh_token_invalid");
    }).finally(() => other.client.close());
  });
});
