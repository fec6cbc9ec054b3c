import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { userIdFor } from "../../src/platform/auth/identity";
import { parseConfig } from "../../src/platform/config";
import { dbFromD1 } from "../../src/platform/db";
import { createRuntime } from "../../src/platform/deps";
import { utcDay } from "../../src/features/account/credits";
import { renewalInterval } from "../../src/features/chat/holds";
import { chatExchange, openMessage } from "../../src/features/chat/send";
import { creditsOf } from "../../src/features/chat/exchange";
import worker from "../../src/worker";
import { call, signIn } from "./support";

// Chat, credits, contexts, search and API keys in workerd over D1: the SQL that only runs
// on D1 in production (conditional upserts, RETURNING, FTS5 triggers) is exercised here.

const send = (headers: Record<string, string>, body: unknown) =>
  call("/chat/send", { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });

describe("chat in workerd over D1", () => {
  it("answers, stores the exchange in a new context, and charges one credit", async () => {
    const auth = await signIn("chatter");
    const res = await send(auth, { message: "How often should I water a fiddle leaf fig?" });
    expect(res.status).toBe(200);
    const reply = (await res.json()) as { response: string; contextId: string; credits: { used: number; remaining: number } };
    expect(reply.response).toBe("echo: How often should I water a fiddle leaf fig?");
    expect(reply.credits).toMatchObject({ used: 1, remaining: 2 });
    expect(res.headers.get("X-Credits-Remaining")).toBe("2");

    const context = (await (await call(`/contexts/${reply.contextId}`, { headers: auth })).json()) as {
      messageCount: number;
      messages: Array<{ role: string; content: string }>;
    };
    expect(context.messageCount).toBe(2);
    expect(context.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    // The FTS5 triggers indexed both messages on D1.
    const hits = (await (await call("/contexts/search?q=fiddle", { headers: auth })).json()) as { items: Array<{ contextId: string }> };
    expect(hits.items.length).toBeGreaterThan(0);
    expect(hits.items.every((i) => i.contextId === reply.contextId)).toBe(true);

    // Deleting the context takes its search entries with it.
    expect((await call(`/contexts/${reply.contextId}`, { method: "DELETE", headers: auth })).status).toBe(204);
    const after = (await (await call("/contexts/search?q=fiddle", { headers: auth })).json()) as { items: unknown[] };
    expect(after.items).toEqual([]);
  });

  it("continues an existing context with an explicit model, replays an Idempotency-Key, and 404s another user's context", async () => {
    const auth = await signIn("continuer");
    const first = (await (await send(auth, { message: "first question" })).json()) as { contextId: string };
    const second = await send({ ...auth, "Idempotency-Key": "k-1" }, { message: "second question", model: "svc-70b", contextId: first.contextId });
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ contextId: first.contextId, model: "svc-70b", credits: { used: 2 } });

    const replay = await send({ ...auth, "Idempotency-Key": "k-1" }, { message: "second question", model: "svc-70b", contextId: first.contextId });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 2 });
    const context = (await (await call(`/contexts/${first.contextId}`, { headers: auth })).json()) as { messageCount: number };
    expect(context.messageCount).toBe(4);

    const stranger = await send(await signIn("stranger"), { message: "let me in", contextId: first.contextId });
    expect(stranger.status).toBe(404);
  });

  it("streams deltas and a done event", async () => {
    const res = await send(await signIn("streamer"), { message: "stream please", stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const text = await res.text();
    expect(text).toMatch(/data: \{"delta":/);
    expect(text).toMatch(/event: done\ndata: \{.*"contextId"/);
  });

  it("never spends more than the daily allowance, even when messages race", async () => {
    const auth = await signIn("racer");
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => send(auth, { message: `race ${i}` })));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 402, 402, 402]);
    const refused = replies.find((r) => r.status === 402)!;
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { message: string }).message).toMatch(/insufficient/i);
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 3, remaining: 0 });
    // The refused debits left no hold behind, the stored exchanges took theirs with them.
    expect(await holdsOf("racer")).toBe(0);
  });

  it("authenticates with an API key whose hash it looks up in D1, until it is revoked", async () => {
    const auth = await signIn("keyholder");
    const created = (await (
      await call("/keys", { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: '{"name":"ci"}' })
    ).json()) as { id: string; key: string };
    expect(created.key).toMatch(/^sk_/);
    expect((await call("/plants", { headers: { "X-API-Key": created.key } })).status).toBe(200);
    expect((await call(`/keys/${created.id}`, { method: "DELETE", headers: auth })).status).toBe(204);
    expect((await call("/plants", { headers: { "X-API-Key": created.key } })).status).toBe(401);
  });

  it("prunes idempotency records older than a day when the cron runs", async () => {
    const auth = await signIn("idempotent");
    const first = await send({ ...auth, "Idempotency-Key": "retry-1" }, { message: "once" });
    expect(first.status).toBe(200);
    const count = () => env.DB.prepare("select count(*) as n from idempotency_keys").first<{ n: number }>("n");
    expect(await count()).toBeGreaterThan(0);

    const ctx = createExecutionContext();
    const tomorrow = new Date(Date.now() + 25 * 3600 * 1000);
    await worker.scheduled(createScheduledController({ scheduledTime: tomorrow, cron: "0 0 * * *" }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    expect(await count()).toBe(0);
  });

  it("releases the credit hold of an exchange whose Worker died, at the user's next message", async () => {
    const name = "died-before-reply";
    const auth = await signIn(name);
    const died = await dieMidExchange(name, auth, "lost", "lost-key");
    expect(await holdsOf(name)).toBe(1);
    // Charged on the day it began: yesterday's, when this runs in the first ten minutes after 00:00 UTC.
    expect(await usedOn(name, utcDay(died))).toBe(1);

    // The next message releases the dead hold in its opening batch: only its own charge remains.
    const next = await send(auth, { message: "next" });
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ credits: { used: 1 } });
    expect(await holdsOf(name)).toBe(0);
    if (utcDay(died) !== utcDay(new Date())) expect(await usedOn(name, utcDay(died))).toBe(0);
    // The key is free again: a retry runs, charged once in total.
    const retry = await send({ ...auth, "Idempotency-Key": "lost-key" }, { message: "lost" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 2 });
  });

  it("never takes a reply that streams far past the timeout for abandoned, and charges it once", async () => {
    const name = "long-stream";
    const auth = await signIn(name);
    expect((await call("/me", { headers: auth })).status).toBe(200);
    // A timeout of 0.5 s, and a clock the test moves past the stale window (5.5 s) while the
    // reply streams (held by the upstream until the test lets it end); the exchange renews its
    // hold every second, on an interval the test runs.
    let offset = 0;
    const now = () => new Date(Date.now() + offset);
    const runtime = await createRuntime(parseConfig({ ...(env as object), MODEL_TIMEOUT_MS: "500" } as never), { now });
    const deps = { ...runtime, db: dbFromD1(env.DB), now };
    const principal = { via: "api-key" as const, userId: await userIdFor(env.AUTH_ISSUER, `user:${name}`), keyId: "long" };
    const renewedAt = async () => (await env.DB.prepare("select renewed_at as at from credit_holds where user_id = ?").bind(principal.userId).first<number>("at")) ?? 0;
    /** Runs the exchange's renewal timer once, and waits for its write (of the clock's time, at least `since`) to land. */
    const renewal = async (since: number) => {
      vi.advanceTimersByTime(renewalInterval(deps.config));
      for (let reads = 0; reads < 1000 && (await renewedAt()) < since; reads++);
      expect(await renewedAt()).toBeGreaterThanOrEqual(since);
    };
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const release = () => fetch(new URL("/test/release-held", env.SVC_MODEL_BASE_URL), { method: "POST" });
    try {
      const opening = await openMessage(deps, { principal, turn: { kind: "send", message: "(held) a long story" }, requestId: "req-long" });
      if (opening.kind !== "ready") throw new Error("expected a charged exchange");
      const finished = (async () => {
        let last: { type: string } | undefined;
        for await (const event of chatExchange(deps, opening, { signal: new AbortController().signal, stream: true })) last = event;
        return last;
      })();
      offset += 1000; // a second in
      await renewal(now().getTime());
      offset += 500 + 5000 + 1;
      await renewal(now().getTime()); // a renewal after the jump
      // The next message's opening batch (on the same clock and timeout) releases abandoned
      // holds: not this one, which is still charged.
      const next = await openMessage(deps, { principal, turn: { kind: "send", message: "meanwhile" }, requestId: "req-meanwhile" });
      if (next.kind !== "ready") throw new Error("expected a charged exchange");
      expect(creditsOf(next.exchange)).toMatchObject({ used: 2 });
      expect(await holdsOf(name)).toBe(2);
      for await (const _event of chatExchange(deps, next, { signal: new AbortController().signal, stream: false })) {
        // run to its end
      }

      await release();
      expect(await finished).toMatchObject({ type: "done" });
      expect(await holdsOf(name)).toBe(0);
      expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 2 });
    } finally {
      await release();
      vi.useRealTimers();
    }
  });

  it("releases the credit holds of dead exchanges when the cron runs", async () => {
    const name = "died-before-cron";
    const auth = await signIn(name);
    const died = await dieMidExchange(name, auth, "lost");
    expect(await holdsOf(name)).toBe(1);
    expect(await usedOn(name, utcDay(died))).toBe(1);

    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "0 0 * * *" }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    expect(await holdsOf(name)).toBe(0);
    expect(await usedOn(name, utcDay(died))).toBe(0);
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 0 });
  });
});

async function holdsOf(name: string): Promise<number> {
  const userId = await userIdFor(env.AUTH_ISSUER, `user:${name}`);
  return (await env.DB.prepare("select count(*) as n from credit_holds where user_id = ?").bind(userId).first<number>("n")) ?? 0;
}

/** The credits `name` was charged on `day` (the day's allowance, credit_days). */
async function usedOn(name: string, day: string): Promise<number> {
  const userId = await userIdFor(env.AUTH_ISSUER, `user:${name}`);
  return (await env.DB.prepare("select used from credit_days where user_id = ? and day = ?").bind(userId, day).first<number>("used")) ?? 0;
}

/** What a Worker that died ten minutes ago, between its opening batch and the reply, left in D1; when it began. */
async function dieMidExchange(name: string, auth: Record<string, string>, message: string, idempotencyKey?: string): Promise<Date> {
  expect((await call("/me", { headers: auth })).status).toBe(200); // the user exists, as after any sign-in
  const runtime = await createRuntime(parseConfig(env as never));
  const tenMinutesAgo = new Date(Date.now() - 10 * 60_000);
  const userId = await userIdFor(env.AUTH_ISSUER, `user:${name}`);
  const opening = await openMessage(
    { ...runtime, db: dbFromD1(env.DB), now: () => tenMinutesAgo },
    { principal: { via: "api-key", userId, keyId: "died" }, turn: { kind: "send", message }, idempotency: idempotencyKey ? { key: idempotencyKey } : undefined, requestId: "req-died" },
  );
  expect(opening.kind).toBe("ready");
  return tenMinutesAgo;
}

