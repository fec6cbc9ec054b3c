import { count, eq, sum } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { creditHolds, idempotencyKeys, messages, usageEvents } from "../schema/index";
import { userIdFor } from "../src/platform/auth/identity";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { chatExchange, openMessage, type ReadyMessage } from "../src/features/chat/send";
import { HOLD_MARGIN_MS, renewalInterval } from "../src/features/chat/holds";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

const MODEL_TIMEOUT_MS = 500;
/** Just past the age at which a hold belongs to a dead exchange. */
const STALE = MODEL_TIMEOUT_MS + HOLD_MARGIN_MS + 1;

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: String(MODEL_TIMEOUT_MS), DAILY_CREDITS: "5" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.onRequest = undefined;
  h.clock.set("2026-11-22T12:00:00.000Z");
});

const send = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  h.request("/chat/send", { method: "POST", token, json: body, headers });

function userIdOf(token: string): Promise<string> {
  const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { iss: string; sub: string };
  return userIdFor(payload.iss, payload.sub);
}

/** What a process killed between its opening batch and its model's reply leaves behind. */
async function dieMidExchange(token: string, message: string, idempotencyKey?: string) {
  expect((await h.request("/me", { token })).status).toBe(200); // the user exists, as after any sign-in
  const userId = await userIdOf(token);
  const opening = await openMessage(h.deps, {
    principal: { via: "api-key", userId, keyId: "crashed" },
    turn: { kind: "send", message },
    idempotency: idempotencyKey ? { key: idempotencyKey } : undefined,
    requestId: "req-crashed",
  });
  if (opening.kind !== "ready") throw new Error("expected a charged exchange");
  return opening;
}

/** Runs an opened exchange to its end, as its route would. */
async function runToEnd(opening: ReadyMessage) {
  for await (const _event of chatExchange(h.deps, opening, { signal: new AbortController().signal, stream: false })) {
    // the events themselves are the route's business
  }
}

/** Credits used today, the usage records and the stored exchanges of a user, which must agree. */
async function ledger(token: string) {
  const userId = await userIdOf(token);
  const credits = ((await (await h.request("/credits", { token })).json()) as { used: number }).used;
  const [usage] = await h.db.select({ credits: sum(usageEvents.credits) }).from(usageEvents).where(eq(usageEvents.userId, userId));
  const [stored] = await h.db.select({ n: count() }).from(messages).where(eq(messages.userId, userId));
  const [holds] = await h.db.select({ n: count() }).from(creditHolds).where(eq(creditHolds.userId, userId));
  return { credits, usage: Number(usage?.credits ?? 0), exchanges: stored!.n / 2, holds: holds!.n };
}

describe("credit holds", () => {
  it("holds the charge while the model answers and drops the hold in the batch that stores the exchange", async () => {
    const token = await h.signIn("hold-lifecycle");
    await send(token, { message: "warm up" });
    const userId = await userIdOf(token);
    let during: unknown[] = [];
    up.onRequest = () => {
      during = [];
      void h.db
        .select()
        .from(creditHolds)
        .where(eq(creditHolds.userId, userId))
        .then((rows) => (during = rows));
    };
    expect((await send(token, { message: "held" })).status).toBe(200);
    expect(during).toEqual([expect.objectContaining({ userId, day: "2026-11-22", credits: 1, claimKey: null })]);
    expect(await ledger(token)).toEqual({ credits: 2, usage: 2, exchanges: 2, holds: 0 });
  });

  it("drops the hold with the refund when the model fails", async () => {
    const token = await h.signIn("hold-refund");
    up.mode = "fail";
    await expectError(await send(token, { message: "hi" }), 502);
    expect(await ledger(token)).toEqual({ credits: 0, usage: 0, exchanges: 0, holds: 0 });
  });

  it("leaves no hold when the debit is refused", async () => {
    const token = await h.signIn("hold-refused");
    for (let i = 0; i < 5; i++) expect((await send(token, { message: `m${i}` })).status).toBe(200);
    await expectError(await send(token, { message: "one too many" }), 402);
    expect(await ledger(token)).toEqual({ credits: 5, usage: 5, exchanges: 5, holds: 0 });
  });

  it("releases a dead exchange's hold at the user's next debit, once it is older than the timeout plus the margin, in the same round trip", async () => {
    const token = await h.signIn("hold-next-debit");
    await send(token, { message: "warm up" });
    await dieMidExchange(token, "lost");
    expect(await ledger(token)).toEqual({ credits: 2, usage: 1, exchanges: 1, holds: 1 });

    // Still young: it might belong to an exchange that is running; it stays.
    h.clock.advance(MODEL_TIMEOUT_MS + HOLD_MARGIN_MS - 1000);
    expect((await send(token, { message: "second" })).status).toBe(200);
    expect(await ledger(token)).toEqual({ credits: 3, usage: 2, exchanges: 2, holds: 1 });

    h.clock.advance(1001);
    const start = h.roundTrips();
    let before = -1;
    up.onRequest = () => (before = h.roundTrips() - start);
    expect((await send(token, { message: "third" })).status).toBe(200);
    expect(before).toBe(1);
    expect(h.roundTrips() - start - before).toBe(1);
    expect(await ledger(token)).toEqual({ credits: 3, usage: 3, exchanges: 3, holds: 0 });
    expect(h.logs.lines.some((l) => l.msg === "chat charge refunded" && l.fields.requestId === "req-crashed")).toBe(false);
  });

  it("looks for a person's dead holds at most once a renewal interval in a process, and at once in another", async () => {
    const interval = renewalInterval({ MODEL_TIMEOUT_MS });
    const token = await h.signIn("hold-interval");
    await dieMidExchange(token, "lost");
    // Just young still: this message looks, and leaves it.
    h.clock.advance(STALE - 2);
    expect((await send(token, { message: "a" })).status).toBe(200);
    expect((await ledger(token)).holds).toBe(1);
    // Stale now, but this process looked less than an interval ago: the hold stays.
    h.clock.advance(2);
    expect((await send(token, { message: "b" })).status).toBe(200);
    h.clock.advance(interval - 3);
    expect((await send(token, { message: "c" })).status).toBe(200);
    expect(await ledger(token)).toEqual({ credits: 4, usage: 3, exchanges: 3, holds: 1 });
    // An interval after it looked, it looks again: released, and this message charged.
    h.clock.advance(1);
    expect((await send(token, { message: "d" })).status).toBe(200);
    expect(await ledger(token)).toEqual({ credits: 4, usage: 4, exchanges: 4, holds: 0 });

    // Another process (or a Worker's other isolate) has not looked: it releases at once.
    const other = await h.signIn("hold-interval-other");
    await dieMidExchange(other, "lost");
    h.clock.advance(STALE - 2);
    expect((await send(other, { message: "a" })).status).toBe(200);
    h.clock.advance(2);
    expect((await send(other, { message: "b" })).status).toBe(200);
    expect((await ledger(other)).holds).toBe(1);
    const elsewhere = h.anotherProcess();
    const res = await elsewhere.request("/chat/send", { method: "POST", headers: { Authorization: `Bearer ${other}`, "Content-Type": "application/json" }, body: JSON.stringify({ message: "c" }) });
    expect(res.status).toBe(200);
    expect(await ledger(other)).toEqual({ credits: 3, usage: 3, exchanges: 3, holds: 0 });
  });

  it("frees a dead exchange's Idempotency-Key with its hold, so the retry runs once and is charged once in total", async () => {
    const token = await h.signIn("hold-retry");
    await dieMidExchange(token, "hello", "retry-after-crash");
    await expectError(await send(token, { message: "hello" }, { "Idempotency-Key": "retry-after-crash" }), 409, /still being answered/);
    expect(await ledger(token)).toEqual({ credits: 1, usage: 0, exchanges: 0, holds: 1 });

    h.clock.advance(STALE);
    const retry = await send(token, { message: "hello" }, { "Idempotency-Key": "retry-after-crash" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    const again = await send(token, { message: "hello" }, { "Idempotency-Key": "retry-after-crash" });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await ledger(token)).toEqual({ credits: 1, usage: 1, exchanges: 1, holds: 0 });
  });

  it("releases dead holds in the daily job, refunded to the day they were charged on", async () => {
    const token = await h.signIn("hold-rollover");
    h.clock.set("2026-11-22T23:59:58.000Z");
    await send(token, { message: "kept" });
    await dieMidExchange(token, "lost at midnight", "midnight-key");
    const userId = await userIdOf(token);

    h.clock.set(new Date(Date.parse("2026-11-23T00:00:00.000Z") + STALE));
    const result = await runDailyRollover(h.deps, { scheduledTime: new Date("2026-11-23T00:00:00.000Z") });
    expect(result.releasedHolds).toBeGreaterThanOrEqual(1);
    const usage = (await (await h.request("/usage?days=2", { token })).json()) as { days: Array<{ day: string; used: number }> };
    expect(usage.days).toEqual([
      { day: "2026-11-23", used: 0 },
      { day: "2026-11-22", used: 1 },
    ]);
    expect(await h.db.select().from(creditHolds).where(eq(creditHolds.userId, userId))).toEqual([]);
    expect(await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.userId, userId))).toEqual([]);
  });

  it("charges again, as it stores the exchange, a hold released while its exchange was still running", async () => {
    const token = await h.signIn("hold-late-settle");
    const slow = await dieMidExchange(token, "a very long stream");
    h.clock.advance(STALE);
    expect((await send(token, { message: "meanwhile" })).status).toBe(200);
    expect(await ledger(token)).toEqual({ credits: 1, usage: 1, exchanges: 1, holds: 0 });

    // The long exchange ends after all, and is stored: its charge comes back with it.
    await runToEnd(slow);
    expect(await ledger(token)).toEqual({ credits: 2, usage: 2, exchanges: 2, holds: 0 });
  });

  it("never takes a reply that streams far past the timeout for abandoned, and charges it once", async () => {
    const token = await h.signIn("hold-long-stream");
    const userId = await userIdOf(token);
    const renewedAt = async () => (await h.db.select({ at: creditHolds.renewedAt }).from(creditHolds).where(eq(creditHolds.userId, userId)))[0]?.at.getTime();
    /** Runs the exchange's renewal timer once, and waits for its write to land. */
    const renewal = async () => {
      vi.advanceTimersByTime(renewalInterval(h.deps.config));
      for (let reads = 0; reads < 1000 && (await renewedAt()) !== h.clock.now().getTime(); reads++);
      expect(await renewedAt()).toBe(h.clock.now().getTime());
    };
    // A reply that streams a word every 100 ms (the timeout is 0.5 s) until the test lets it
    // end, while the exchange renews its hold every second, on an interval the test runs.
    // The clock jumps past the stale window meanwhile.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    up.holds = () => true;
    const streaming = new Promise<void>((resolve) => (up.onRequest = () => resolve()));
    try {
      const long = send(token, { message: "a long story", stream: true }).then((res) => res.text());
      await streaming;
      h.clock.advance(1000);
      await renewal();
      h.clock.advance(STALE);
      await renewal(); // a renewal after the jump
      up.holds = undefined;
      expect((await send(token, { message: "meanwhile" })).status).toBe(200);
      // The long reply's hold is still there, charged: nothing was refunded.
      expect(await ledger(token)).toEqual({ credits: 2, usage: 1, exchanges: 1, holds: 1 });
      up.releaseHeld();
      expect(await long).toContain("event: done");
      expect(await ledger(token)).toEqual({ credits: 2, usage: 2, exchanges: 2, holds: 0 });
    } finally {
      up.holds = undefined;
      up.releaseHeld();
      vi.useRealTimers();
    }
  });

  it("never charges past the allowance a reply whose hold was released while it ran", async () => {
    const token = await h.signIn("hold-late-over");
    const slow = await dieMidExchange(token, "a very long stream");
    h.clock.advance(STALE);
    // The release refunds the first; five more messages use the whole day (5 credits).
    for (let i = 0; i < 5; i++) expect((await send(token, { message: `meanwhile ${i}` })).status).toBe(200);
    await runToEnd(slow);
    const after = await ledger(token);
    expect(after.credits).toBe(5); // not 6: the late reply is kept, uncharged
    expect(after.exchanges).toBe(6);
    expect(after.holds).toBe(0);
  });

  it("releases the hold when the caller stops reading the reply partway", async () => {
    const token = await h.signIn("hold-stop-reading");
    const opening = await dieMidExchange(token, "one two three four five");
    up.reply = () => "one two three four five";
    const seen: string[] = [];
    for await (const event of chatExchange(h.deps, opening, { signal: new AbortController().signal, stream: true })) {
      seen.push(event.type);
      if (event.type === "delta") break;
    }
    expect(seen).toEqual(["started", "delta"]);
    expect(await ledger(token)).toEqual({ credits: 0, usage: 0, exchanges: 0, holds: 0 });
  });

  it("releases the hold, and answers 404, when the context is deleted while the model answers", async () => {
    const token = await h.signIn("hold-context-gone");
    const first = (await (await send(token, { message: "start a context" })).json()) as { contextId: string };
    const userId = await userIdOf(token);
    const opening = await openMessage(h.deps, {
      principal: { via: "api-key", userId, keyId: "k" },
      turn: { kind: "send", message: "and more", contextId: first.contextId },
      requestId: "req-gone",
    });
    if (opening.kind !== "ready") throw new Error("expected a charged exchange");
    expect((await h.request(`/contexts/${first.contextId}`, { method: "DELETE", token })).status).toBe(204);
    await expect(runToEnd(opening)).rejects.toMatchObject({ code: "context_not_found", message: expect.stringMatching(/deleted while the model was answering; nothing was charged/) });
    expect(await ledger(token)).toEqual({ credits: 1, usage: 1, exchanges: 0, holds: 0 });
  });

  it("does not refund twice an exchange that fails after its hold was released", async () => {
    const token = await h.signIn("hold-late-fail");
    const slow = await dieMidExchange(token, "doomed");
    h.clock.advance(STALE);
    expect((await send(token, { message: "meanwhile" })).status).toBe(200);
    up.mode = "fail";
    await expect(runToEnd(slow)).rejects.toMatchObject({ code: "model_failed" });
    expect(await ledger(token)).toEqual({ credits: 1, usage: 1, exchanges: 1, holds: 0 });
  });
});
