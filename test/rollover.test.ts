import { asc, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { creditDays, idempotencyKeys, shares, usageEvents } from "../schema/index";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";

let up: FakeUpstream;
let h: Harness;
let alice: string;
let bob: string;

const at = (iso: string) => h.clock.set(iso);
const send = (token: string, headers: Record<string, string> = {}) =>
  h.request("/chat/send", { method: "POST", token, json: { message: "hi" }, headers });
const rollover = (scheduled: string) => runDailyRollover(h.deps, { scheduledTime: new Date(scheduled) });

async function snapshot() {
  return JSON.stringify({
    days: await h.db.select().from(creditDays).orderBy(asc(creditDays.userId), asc(creditDays.day)),
    events: await h.db.select().from(usageEvents).orderBy(asc(usageEvents.id)),
    keys: await h.db.select().from(idempotencyKeys).orderBy(asc(idempotencyKeys.userId), asc(idempotencyKeys.key)),
    shares: await h.db.select().from(shares).orderBy(asc(shares.token)),
  });
}

const usage = async (token: string, days = 90) => (await h.request(`/usage?days=${days}`, { token })).json();

/** Begins a session for Alice; its refresh token. */
async function signInSession() {
  const res = await h.request("/auth/session", { method: "POST", json: { accessToken: alice } });
  expect(res.status).toBe(200);
  return /refresh_token=([^;]+)/.exec(res.headers.get("set-cookie")!)![1]!;
}
async function refresh(token: string) {
  const res = await h.request("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${token}`, Origin: "http://localhost:8787" } });
  expect(res.status).toBe(200);
  return /refresh_token=([^;]+)/.exec(res.headers.get("set-cookie")!)![1]!;
}

beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, DAILY_CREDITS: "5" } });
  alice = await h.signIn("alice");
  bob = await h.signIn("bob");

  // Alice: history well past 90 days, two recent days, a day left at 0 by a refund,
  // an idempotency record over 24 h old and one under.
  at("2026-08-01T10:00:00.000Z");
  await send(alice, { "Idempotency-Key": "ancient" });
  // Sessions: one last used on 10-01 (idle past the 30 days by 11-23), one refreshed on 10-10
  // (that refresh token replaced then) and again on 11-01; a wallet nonce never used.
  at("2026-10-01T10:00:00.000Z");
  await signInSession();
  at("2026-10-10T10:00:00.000Z");
  const first = await signInSession();
  const second = await refresh(first);
  at("2026-11-01T10:00:00.000Z");
  await refresh(second);
  at("2026-11-19T10:00:00.000Z");
  await h.request("/auth/wallet/nonce", { method: "POST" });
  at("2026-11-19T10:00:00.000Z");
  await send(alice);
  await send(alice);
  at("2026-11-20T10:00:00.000Z");
  up.mode = "fail";
  await send(alice);
  up.mode = "ok";
  at("2026-11-21T10:00:00.000Z");
  await send(alice, { "Idempotency-Key": "old" });
  at("2026-11-22T12:00:00.000Z");
  const recent = (await (await send(alice, { "Idempotency-Key": "recent" })).json()) as { contextId: string };
  // A share link that expires an hour later, and one that never does.
  const shared = await h.request(`/contexts/${recent.contextId}/share`, { method: "POST", token: alice, json: { expiresIn: 3600 } });
  expect(shared.status).toBe(201);
  const lasting = (await (await send(alice)).json()) as { contextId: string };
  expect((await h.request(`/contexts/${lasting.contextId}/share`, { method: "POST", token: alice })).status).toBe(201);
  // Bob: a refunded message just after midnight, on the day the job runs for.
  at("2026-11-23T00:00:00.000Z");
  up.mode = "fail";
  await send(bob);
  up.mode = "ok";
  at("2026-11-23T00:00:05.000Z");
});
afterAll(async () => {
  await h.close();
  await up.close();
});

describe("the daily rollover", () => {
  it("closes finished days, prunes expired records, and leaves what users see unchanged", async () => {
    const before = await usage(alice);
    const credits = await (await h.request("/credits", { token: alice })).json();
    const waiting = await waitingSearchEntries();
    expect(waiting).toBeGreaterThan(0); // the messages sent above, not yet searched for
    const result = await rollover("2026-11-23T00:00:00.000Z");
    expect(result).toEqual({
      day: "2026-11-23",
      expiredIdempotencyKeys: 2, // "ancient" and "old"; "recent" is under 24 h
      emptyDaysClosed: 1, // Alice's 2026-11-20, refunded to 0; Bob's is today's
      prunedDays: 1, // 2026-08-01, past the 90 days /usage serves
      prunedUsageEvents: 1,
      expiredShares: 1, // the one-hour link; the lasting one stays
      releasedHolds: 0, // every exchange ended
      indexedSearchEntries: waiting,
      prunedModelTimings: 1, // the 2026-08-01 exchange's; the others are within the week's window
      expiredSessions: 1, // the one unused since 10-01
      prunedRefreshTokens: 1, // replaced on 10-10; the one replaced on 11-01 stays
      expiredWalletNonces: 1,
      prunedEndedSessions: 0,
      prunedSignUpCounts: 0,
      prunedChatMinutes: 0,
      prunedUsageRollups: 0,
      deletedUnsentUploads: 0,
      examinedAttachmentFiles: 0, // no uploads in this file
      removedUnnamedFiles: 0,
    });
    expect(await waitingSearchEntries()).toBe(0);
    expect(((await (await h.request("/shares", { token: alice })).json()) as { items: unknown[] }).items).toHaveLength(1);
    expect(await usage(alice)).toEqual(before);
    expect(await (await h.request("/credits", { token: alice })).json()).toEqual(credits);
    // The recent key still replays, uncharged.
    const replay = await send(alice, { "Idempotency-Key": "recent" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });

  it("changes nothing when run twice, or late for the same day", async () => {
    const state = await snapshot();
    const zero = { day: "2026-11-23", expiredIdempotencyKeys: 0, emptyDaysClosed: 0, prunedDays: 0, prunedUsageEvents: 0, expiredShares: 0, releasedHolds: 0, indexedSearchEntries: 0, prunedModelTimings: 0, expiredSessions: 0, prunedRefreshTokens: 0, expiredWalletNonces: 0, prunedEndedSessions: 0, prunedSignUpCounts: 0, prunedChatMinutes: 0, prunedUsageRollups: 0, deletedUnsentUploads: 0, examinedAttachmentFiles: 0, removedUnnamedFiles: 0 };
    expect(await rollover("2026-11-23T00:00:00.000Z")).toEqual(zero);
    expect(await snapshot()).toBe(state);
    at("2026-11-23T05:17:00.000Z"); // the run starts hours late; its scheduled time is what counts
    expect(await rollover("2026-11-23T00:00:00.000Z")).toEqual(zero);
    expect(await snapshot()).toBe(state);
  });

  it("never touches today's row, even one at 0", async () => {
    const days = await usage(bob, 1);
    expect(days).toEqual({ days: [{ day: "2026-11-23", used: 0 }] });
    expect((await snapshot()).includes('"day":"2026-11-23","used":0')).toBe(true);
  });

  it("catches up after missed days, and the missed runs then change nothing", async () => {
    at("2026-11-26T00:00:00.000Z");
    const before = await usage(alice, 10);
    const result = await rollover("2026-11-26T00:00:00.000Z");
    expect(result.expiredIdempotencyKeys).toBe(1); // "recent" has expired by now
    expect(result.emptyDaysClosed).toBe(1); // Bob's 2026-11-23 is finished now
    expect(await usage(alice, 10)).toEqual(before);
    const state = await snapshot();
    for (const missed of ["2026-11-24T00:00:00.000Z", "2026-11-25T00:00:00.000Z", "2026-11-26T00:00:00.000Z"]) {
      await rollover(missed);
      expect(await snapshot()).toBe(state);
    }
  });

  it("does not hold back the new day's allowance, which never depended on it", async () => {
    at("2026-11-26T00:00:01.000Z");
    const res = await send(alice);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { credits: { used: number } }).credits.used).toBe(1);
  });
});

async function waitingSearchEntries(): Promise<number> {
  const [row] = await h.db.all<{ n: number }>(sql`select count(*) as n from search_pending`);
  return row!.n;
}
