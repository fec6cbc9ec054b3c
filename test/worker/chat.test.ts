import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
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
});
