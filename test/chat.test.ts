import { and, count, eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { contexts, messages, usageEvents } from "../schema/index";
import { userIdFor } from "../src/platform/auth/identity";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { parseSse } from "./support/sse";

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({
    env: {
      SVC_MODEL_BASE_URL: up.baseUrl,
      SVC_MODEL_API_KEY: "svc-test-key",
      MODEL_TIMEOUT_MS: "500",
      DAILY_CREDITS: "5",
      ANTHROPIC_API_KEY: "anthropic-test-key",
      ANTHROPIC_BASE_URL: up.origin,
    },
  });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  up.onRequest = undefined;
});

interface Reply {
  response: string;
  model: string;
  contextId: string;
  messageId: string;
  parentId: string;
  credits: { allowance: number; used: number; remaining: number; resetAt: string };
}

const send = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  h.request("/chat/send", { method: "POST", token, json: body, headers });

async function creditsUsed(token: string): Promise<number> {
  return ((await (await h.request("/credits", { token })).json()) as { used: number }).used;
}

async function storedMessages(userToken: string) {
  const userId = await userIdOf(userToken);
  const [row] = await h.db.select({ n: count() }).from(messages).where(eq(messages.userId, userId));
  return row!.n;
}

function userIdOf(token: string): Promise<string> {
  const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { iss: string; sub: string };
  return userIdFor(payload.iss, payload.sub);
}

describe("POST /chat/send", () => {
  it("answers with the reply, the model, a new context and the credits, with credit headers", async () => {
    const token = await h.signIn("chat-basic");
    const res = await send(token, { message: "How often should I water a monstera?" });
    expect(res.status).toBe(200);
    const reply = (await res.json()) as Reply;
    expect(reply).toEqual({
      response: "echo: How often should I water a monstera?",
      model: "svc-70b",
      contextId: expect.stringMatching(/^ctx_/),
      messageId: expect.stringMatching(/^msg_/),
      parentId: expect.stringMatching(/^msg_/),
      credits: { allowance: 5, used: 1, remaining: 4, resetAt: "2026-11-23T00:00:00.000Z" },
    });
    expect(res.headers.get("x-credits-remaining")).toBe("4");
    expect(res.headers.get("x-credits-reset")).toBe("2026-11-23T00:00:00.000Z");
    // The upstream got the configured model name and key.
    const call = up.requests.at(-1)!;
    expect(call.body.model).toBe("llama-3.3-70b");
    expect(call.headers.authorization).toBe("Bearer svc-test-key");
  });

  it("names a new context after its first message, trimmed to 60 characters with an ellipsis", async () => {
    const token = await h.signIn("chat-naming");
    const long = `  Why   are the leaves of my fiddle leaf fig turning brown at the edges, and what should I do?`;
    const reply = (await (await send(token, { message: long })).json()) as Reply;
    const [ctx] = await h.db.select().from(contexts).where(eq(contexts.id, reply.contextId));
    expect(ctx!.name).toBe("Why are the leaves of my fiddle leaf fig turning brown at…");
    expect(ctx!.name.length).toBeLessThanOrEqual(60);
    expect(ctx!.messageCount).toBe(2);
  });

  it("sends the model the context's earlier messages, oldest first, and stores both turns in order", async () => {
    const token = await h.signIn("chat-history");
    const first = (await (await send(token, { message: "My basil wilts." })).json()) as Reply;
    await send(token, { message: "It is on a sunny sill.", contextId: first.contextId });
    const third = await send(token, { message: "What now?", contextId: first.contextId });
    expect(third.status).toBe(200);
    expect(up.requests.at(-1)!.body.messages).toEqual([
      { role: "user", content: "My basil wilts." },
      { role: "assistant", content: "echo: My basil wilts." },
      { role: "user", content: "It is on a sunny sill." },
      { role: "assistant", content: "echo: It is on a sunny sill." },
      { role: "user", content: "What now?" },
    ]);
    const stored = await h.db
      .select({ role: messages.role, content: messages.content, model: messages.model, createdAt: messages.createdAt })
      .from(messages)
      .where(eq(messages.contextId, first.contextId))
      .orderBy(messages.createdAt, messages.id);
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
    expect(stored[1]!.model).toBe("svc-70b");
    // The clock stood still, yet each reply is strictly after its message.
    for (let i = 1; i < stored.length; i += 2) expect(stored[i]!.createdAt.getTime()).toBeGreaterThan(stored[i - 1]!.createdAt.getTime());
    const [ctx] = await h.db.select().from(contexts).where(eq(contexts.id, first.contextId));
    expect(ctx!.messageCount).toBe(6);
  });

  it("trims the history oldest-first to fit the model's context window", async () => {
    const trimmer = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, DAILY_CREDITS: "100" } });
    const token = await trimmer.signIn("chat-trim");
    try {
      up.reply = () => "ok";
      const big = (i: number) => `${i}:`.padEnd(32_000, "x");
      const first = (await (await trimmer.request("/chat/send", { method: "POST", token, json: { message: big(0) } })).json()) as Reply;
      for (let i = 1; i < 14; i++) {
        const res = await trimmer.request("/chat/send", { method: "POST", token, json: { message: big(i), contextId: first.contextId } });
        expect(res.status).toBe(200);
      }
      const sent = up.requests.at(-1)!.body.messages;
      const tokens = sent.reduce((sum, m) => sum + Math.ceil(m.content.length / 3) + 4, 0);
      expect(tokens).toBeLessThanOrEqual(131_072 - 4096);
      expect(sent.at(-1)!.content).toBe(big(13));
      expect(sent.some((m) => m.content === big(0))).toBe(false);
      // What is kept is the newest part of the conversation, in order.
      const kept = sent.filter((m) => m.role === "user").map((m) => Number(m.content.split(":")[0]));
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 14 - kept.length + i));
      expect(kept.length).toBeGreaterThan(5);
    } finally {
      await trimmer.close();
    }
  });

  it("uses the caller's default model when the message names none", async () => {
    const token = await h.signIn("chat-default-model");
    const patched = await h.request("/me", { method: "PATCH", token, json: { preferences: { defaultModel: "claude-haiku-3.5" } } });
    expect(patched.status).toBe(200);
    const reply = (await (await send(token, { message: "hi" })).json()) as Reply;
    expect(reply.model).toBe("claude-haiku-3.5");
    expect(up.requests.at(-1)!.path).toBe("/v1/messages");
  });

  it("answers 503 without a charge when the caller's default model is not configured", async () => {
    const token = await h.signIn("chat-default-unavailable");
    await h.request("/me", { method: "PATCH", token, json: { preferences: { defaultModel: "gpt-4o-mini" } } });
    await expectError(await send(token, { message: "hi" }), 503, /gpt-4o-mini is not configured.*OPENAI_API_KEY/);
    expect(await creditsUsed(token)).toBe(0);
  });
});

describe("requests that are refused", () => {
  it("answers 401 asking the caller to sign in or send an API key", async () => {
    const res = await h.request("/chat/send", { method: "POST", json: { message: "hi" } });
    const body = await expectError(res, 401, /log in.*or provide an API key/);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(body.message).toMatch(/X-API-Key/);
  });

  it("answers 401 for a bad API key", async () => {
    await expectError(await h.request("/chat/send", { method: "POST", apiKey: "sk_nope", json: { message: "hi" } }), 401);
  });

  it.each([
    ["no message", {}, /message/],
    ["an empty message", { message: "" }, /message: must not be empty/],
    ["a blank message", { message: "   " }, /message: must not be empty/],
    ["a message over 32,000 characters", { message: "x".repeat(32_001) }, /message: must be at most 32000/],
    ["a message that is not a string", { message: 42 }, /message/],
    ["stream that is not a boolean", { message: "hi", stream: "yes" }, /stream/],
    ["a contextId that is not a string", { message: "hi", contextId: 7 }, /contextId/],
  ])("answers 400 for %s", async (_label, body, pattern) => {
    const token = await h.signIn("chat-400");
    await expectError(await send(token, body), 400, pattern);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("accepts a message of exactly 32,000 characters, counting an emoji once", async () => {
    const token = await h.signIn("chat-32k");
    expect((await send(token, { message: "🌱".repeat(32_000) })).status).toBe(200);
  });

  it("answers 400 naming the available models for an unknown model", async () => {
    const token = await h.signIn("chat-unknown-model");
    const body = await expectError(await send(token, { message: "hi", model: "gpt-9" }), 400, /unknown model 'gpt-9'/);
    expect(body.message).toMatch(/svc-70b/);
    expect(body.message).toMatch(/claude-haiku-3\.5/);
    expect(body.message).not.toMatch(/gpt-4o-mini/); // not configured here
  });

  it("quotes an unknown model and an unknown context as short printable excerpts", async () => {
    const token = await h.signIn("chat-quotes");
    const model = await expectError(await send(token, { message: "hi", model: `a\u0001${"m".repeat(98)}` }), 400);
    expect(model.message).toMatch(new RegExp(`^unknown model 'a\\\\u0001${"m".repeat(58)}…'; available models: svc-70b, `));
    const context = await expectError(await send(token, { message: "hi", contextId: `ctx\u0007${"c".repeat(96)}` }), 404);
    expect(context.message).toBe(`context ctx\\u0007${"c".repeat(56)}… not found`);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("answers 503 saying what to configure for a model without credentials, and charges nothing", async () => {
    const token = await h.signIn("chat-unconfigured");
    await expectError(await send(token, { message: "hi", model: "llama-3.1-8b-instant" }), 503, /not configured.*GROQ_API_KEY/);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("answers 404 for an unknown context and for another user's, without a charge", async () => {
    const owner = await h.signIn("chat-ctx-owner");
    const other = await h.signIn("chat-ctx-other");
    const mine = (await (await send(owner, { message: "private" })).json()) as Reply;
    await expectError(await send(other, { message: "peek", contextId: mine.contextId }), 404, /not found/);
    await expectError(await send(other, { message: "peek", contextId: "ctx_nope" }), 404, /context ctx_nope not found/);
    expect(await creditsUsed(other)).toBe(0);
    expect(await storedMessages(other)).toBe(0);
  });

  it("answers 400 for an Idempotency-Key that is not visible ASCII", async () => {
    const token = await h.signIn("chat-bad-key");
    await expectError(await send(token, { message: "hi" }, { "Idempotency-Key": "x".repeat(256) }), 400, /idempotency-key/i);
  });
});

describe("when the model fails", () => {
  it("answers 502 on an upstream error, refunds, stores nothing and leaks nothing", async () => {
    const token = await h.signIn("chat-502");
    up.mode = "fail";
    const res = await send(token, { message: "hi" });
    const body = await expectError(res, 502, /svc-70b failed to answer; nothing was charged/);
    // The charge was refunded: no header may tell the client a credit was spent.
    expect(res.headers.get("x-credits-remaining")).toBeNull();
    expect(JSON.stringify(body)).not.toContain(up.secretInErrors);
    expect(JSON.stringify(body)).not.toContain("svc-test-key");
    expect(await creditsUsed(token)).toBe(0);
    expect(await storedMessages(token)).toBe(0);
    // The detail is in the log, under the request id the reply carries.
    const requestId = res.headers.get("x-request-id");
    const logged = h.logs.lines.find((l) => l.msg === "chat model call failed" && l.fields.requestId === requestId);
    expect(JSON.stringify(logged?.fields.err ?? {}, (_k, v) => (v instanceof Error ? v.message : v))).toContain("500");
  });

  it("answers 504 when the model does not answer within MODEL_TIMEOUT_MS, and refunds", async () => {
    const token = await h.signIn("chat-504");
    up.mode = "slow";
    const started = Date.now();
    await expectError(await send(token, { message: "hi" }), 504, /did not answer within 500 ms; nothing was charged/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await creditsUsed(token)).toBe(0);
    expect(await storedMessages(token)).toBe(0);
  });

  it("answers 503 when the provider refuses the server's key, and refunds", async () => {
    const token = await h.signIn("chat-upstream-401");
    up.mode = "unauthorized";
    await expectError(await send(token, { message: "hi" }), 503, /refused this server's credentials/);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("keeps an existing context as it was after a failure", async () => {
    const token = await h.signIn("chat-fail-in-context");
    const first = (await (await send(token, { message: "one" })).json()) as Reply;
    up.mode = "fail";
    await expectError(await send(token, { message: "two", contextId: first.contextId }), 502);
    const [ctx] = await h.db.select().from(contexts).where(eq(contexts.id, first.contextId));
    expect(ctx!.messageCount).toBe(2);
    expect(await storedMessages(token)).toBe(2);
    expect(await creditsUsed(token)).toBe(1);
  });
});

describe("streaming", () => {
  it("sends data deltas, then a done event carrying the reply without response", async () => {
    const token = await h.signIn("chat-stream");
    up.reply = () => "Water it when the top inch is dry.";
    const res = await send(token, { message: "monstera?", stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-credits-remaining")).toBe("4");
    const events = parseSse(await res.text());
    const deltas = events.filter((e) => e.event === "message").map((e) => JSON.parse(e.data) as { delta: string });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.delta).join("")).toBe("Water it when the top inch is dry.");
    const last = events.at(-1)!;
    expect(last.event).toBe("done");
    const done = JSON.parse(last.data) as Omit<Reply, "response">;
    expect(done).toEqual({
      model: "svc-70b",
      contextId: expect.stringMatching(/^ctx_/),
      messageId: expect.stringMatching(/^msg_/),
      parentId: expect.stringMatching(/^msg_/),
      credits: { allowance: 5, used: 1, remaining: 4, resetAt: "2026-11-23T00:00:00.000Z" },
    });
    expect(up.requests.at(-1)!.body.stream).toBe(true);
    const stored = await h.db.select({ content: messages.content }).from(messages).where(eq(messages.contextId, done.contextId)).orderBy(messages.createdAt);
    expect(stored.map((m) => m.content)).toEqual(["monstera?", "Water it when the top inch is dry."]);
  });

  it("streams from the Anthropic Messages API as well", async () => {
    const token = await h.signIn("chat-stream-anthropic");
    up.reply = () => "Claude says hello there.";
    const res = await send(token, { message: "hi", model: "claude-haiku-3.5", stream: true });
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta: string }).delta).join("")).toBe(
      "Claude says hello there.",
    );
    expect(events.at(-1)!.event).toBe("done");
    const call = up.requests.at(-1)!;
    expect(call.path).toBe("/v1/messages");
    expect(call.headers["x-api-key"]).toBe("anthropic-test-key");
    expect(call.headers["anthropic-version"]).toBe("2023-06-01");
    expect(call.body).toMatchObject({ model: "claude-3-5-haiku-20241022", stream: true, messages: [{ role: "user", content: "hi" }] });
    expect(call.body.max_tokens).toBeGreaterThan(0);
  });

  it("sends an error event, refunds and stores nothing when the upstream breaks off mid-stream", async () => {
    const token = await h.signIn("chat-stream-break");
    up.mode = "fail-mid-stream";
    up.reply = () => "one two three four five";
    const res = await send(token, { message: "hi", stream: true });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === "message").length).toBe(2);
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(JSON.parse(last.data)).toEqual({ error: 502, message: expect.stringMatching(/failed to answer; nothing was charged/), code: "model_failed" });
    expect(events.some((e) => e.event === "done")).toBe(false);
    expect(await creditsUsed(token)).toBe(0);
    expect(await storedMessages(token)).toBe(0);
  });

  it("sends a 504 error event when the upstream stalls mid-stream", async () => {
    const token = await h.signIn("chat-stream-stall");
    up.mode = "stall-mid-stream";
    const events = parseSse(await (await send(token, { message: "a b c d e f", stream: true })).text());
    expect(events.at(-1)).toEqual({ event: "error", data: expect.stringContaining('"error":504') });
    expect(await creditsUsed(token)).toBe(0);
  });

  it("answers a JSON 502 before streaming when the upstream fails at once", async () => {
    const token = await h.signIn("chat-stream-502");
    up.mode = "fail";
    const res = await send(token, { message: "hi", stream: true });
    await expectError(res, 502);
    expect(res.headers.get("x-credits-remaining")).toBeNull();
    expect(await creditsUsed(token)).toBe(0);
  });

  it("settles once when the client goes away mid-stream: refunded, upstream cancelled, nothing stored", async () => {
    const token = await h.signIn("chat-stream-gone");
    const base = await h.listen();
    up.mode = "stall-mid-stream";
    up.reply = () => "one two three four";
    const cancelledBefore = up.cancelled();
    const client = new AbortController();
    const res = await fetch(`${base}/chat/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "hi", stream: true }),
      signal: client.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toContain('"delta"');
    expect(await creditsUsed(token)).toBe(1);
    client.abort();
    await expect.poll(() => creditsUsed(token), { timeout: 3000 }).toBe(0);
    await expect.poll(() => up.cancelled(), { timeout: 3000 }).toBeGreaterThan(cancelledBefore);
    expect(await storedMessages(token)).toBe(0);
    // Exactly once: the refund is not repeated by the timeout that would have fired.
    await new Promise((r) => setTimeout(r, 700));
    const userId = await userIdOf(token);
    expect(h.logs.lines.filter((l) => l.msg === "chat charge refunded" && l.fields.userId === userId).length).toBe(1);
  });

  it("cancels the model call when the client of a whole (not streamed) reply goes away: refunded, nothing stored", async () => {
    // A model timeout far past the test's: only the client leaving can end this exchange.
    const patient = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: "600000" } });
    try {
      const token = await patient.signIn("chat-whole-gone");
      const used = async () => ((await (await patient.request("/credits", { token })).json()) as { used: number }).used;
      up.mode = "slow";
      let arrived!: () => void;
      const atUpstream = new Promise<void>((resolve) => (arrived = resolve));
      up.onRequest = () => arrived();
      const cancelledBefore = up.cancelled();
      const client = new AbortController();
      const sent = fetch(`${await patient.listen()}/chat/send`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ message: "hi" }),
        signal: client.signal,
      }).catch((err: unknown) => err);
      await atUpstream;
      expect(await used()).toBe(1);
      client.abort();
      expect(await sent).toBeInstanceOf(Error);
      await expect.poll(() => up.cancelled(), { timeout: 5000 }).toBeGreaterThan(cancelledBefore);
      await expect.poll(used, { timeout: 5000 }).toBe(0);
      const [row] = await patient.db.select({ n: count() }).from(messages);
      expect(row!.n).toBe(0);
    } finally {
      await patient.close();
    }
  });
});

describe("Idempotency-Key", () => {
  it("returns the first reply to a retry with the same key, without a second charge or model call", async () => {
    const token = await h.signIn("idem-replay");
    const key = { "Idempotency-Key": "retry-1" };
    const first = await send(token, { message: "hello" }, key);
    const calls = up.requests.length;
    const second = await send(token, { message: "hello" }, key);
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual(await first.json());
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(second.headers.get("x-credits-remaining")).toBe("4");
    expect(up.requests.length).toBe(calls);
    expect(await creditsUsed(token)).toBe(1);
    expect(await storedMessages(token)).toBe(2);
  });

  it("replays a finished reply as a stream when the retry asks for one", async () => {
    const token = await h.signIn("idem-stream");
    const key = { "Idempotency-Key": "retry-stream" };
    const first = (await (await send(token, { message: "hello" }, key)).json()) as Reply;
    const events = parseSse(await (await send(token, { message: "hello", stream: true }, key)).text());
    expect(events).toEqual([
      { event: "message", data: JSON.stringify({ delta: first.response }) },
      { event: "done", data: JSON.stringify({ model: first.model, contextId: first.contextId, messageId: first.messageId, parentId: first.parentId, credits: first.credits }) },
    ]);
    expect(await creditsUsed(token)).toBe(1);
  });

  it("answers 422 when the key is reused for a different message", async () => {
    const token = await h.signIn("idem-mismatch");
    await send(token, { message: "first" }, { "Idempotency-Key": "k" });
    await expectError(await send(token, { message: "second" }, { "Idempotency-Key": "k" }), 422, /different request; send a new key/);
    expect(await creditsUsed(token)).toBe(1);
  });

  it("answers 409 while the first request is running, and lets a retry run afresh after it failed", async () => {
    const token = await h.signIn("idem-concurrent");
    const key = { "Idempotency-Key": "in-flight" };
    up.mode = "slow";
    let arrived!: () => void;
    const atUpstream = new Promise<void>((resolve) => (arrived = resolve));
    up.onRequest = () => arrived();
    const first = send(token, { message: "hi" }, key);
    await atUpstream;
    const busy = await send(token, { message: "hi" }, key);
    expect(busy.headers.get("retry-after")).toBe("2");
    await expectError(busy, 409, /still being answered/);
    await expectError(await first, 504);
    up.mode = "ok";
    const retry = await send(token, { message: "hi" }, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect(await creditsUsed(token)).toBe(1);
  });

  it("charges two concurrent sends with the same key once", async () => {
    const token = await h.signIn("idem-race");
    const key = { "Idempotency-Key": "race" };
    const results = await Promise.all(Array.from({ length: 6 }, () => send(token, { message: "same" }, key)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(await creditsUsed(token)).toBe(1);
    expect(await storedMessages(token)).toBe(2);
  });

  it("keeps keys per user and forgets them after 24 hours", async () => {
    const alice = await h.signIn("idem-alice");
    const bob = await h.signIn("idem-bob");
    const key = { "Idempotency-Key": "shared-name" };
    const a = (await (await send(alice, { message: "hi" }, key)).json()) as Reply;
    const b = (await (await send(bob, { message: "hi" }, key)).json()) as Reply;
    expect(b.contextId).not.toBe(a.contextId);
    expect(await creditsUsed(bob)).toBe(1);
    h.clock.advance(24 * 3600_000 + 1000);
    try {
      const later = (await (await send(alice, { message: "hi" }, key)).json()) as Reply;
      expect(later.contextId).not.toBe(a.contextId);
      expect(later.credits.used).toBe(1); // a new day, a new charge
    } finally {
      h.clock.set("2026-11-22T12:00:00.000Z");
    }
  });
});

describe("database round trips", () => {
  it("makes one before the model call and one after, with a JWT", async () => {
    const token = await h.signIn("trips-jwt");
    const first = (await (await send(token, { message: "warm up" })).json()) as Reply;
    await h.settled(); // the new context's title, asked in the background
    const start = h.roundTrips();
    let before = -1;
    up.onRequest = () => (before = h.roundTrips() - start);
    expect((await send(token, { message: "count", contextId: first.contextId }, { "Idempotency-Key": "trips" })).status).toBe(200);
    expect(before).toBe(1);
    expect(h.roundTrips() - start - before).toBe(1);
  });

  it("makes two before the model call (key lookup, then the batch) and one after, with an API key", async () => {
    const token = await h.signIn("trips-key");
    const created = await h.request("/keys", { method: "POST", token, json: { name: "bench" } });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    await h.request("/chat/send", { method: "POST", apiKey: key, json: { message: "warm up" } }); // records first use
    const start = h.roundTrips();
    let before = -1;
    up.onRequest = () => (before = h.roundTrips() - start);
    const res = await h.request("/chat/send", { method: "POST", apiKey: key, json: { message: "count" } });
    expect(res.status).toBe(200);
    expect(before).toBe(2);
    expect(h.roundTrips() - start - before).toBe(1);
  });

  it("refunds a failed call in one more round trip", async () => {
    const token = await h.signIn("trips-refund");
    await send(token, { message: "warm up" });
    await h.settled(); // the new context's title, asked in the background
    up.mode = "fail";
    const start = h.roundTrips();
    await send(token, { message: "x" });
    expect(h.roundTrips() - start).toBe(2);
  });
});

describe("the OpenAPI document", () => {
  it("describes the chat, model, credit and usage endpoints", async () => {
    const doc = (await (await h.request("/openapi.json")).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/chat/send", "/models", "/credits", "/usage", "/usage/messages"]));
    expect(Object.keys(doc.paths["/chat/send"]!.post!.responses)).toEqual(expect.arrayContaining(["200", "401", "402", "404", "409", "422", "502", "503", "504"]));
  });
});

describe("usage records", () => {
  it("records one usage event per charged message, and the refunded one as failed, uncharged", async () => {
    const token = await h.signIn("usage-events");
    const userId = await userIdOf(token);
    await send(token, { message: "a" });
    up.mode = "fail";
    await send(token, { message: "b" });
    const all = await h.db.select().from(usageEvents).where(and(eq(usageEvents.userId, userId), eq(usageEvents.kind, "message")));
    expect(all.filter((r) => r.outcome === "failed")).toEqual([expect.objectContaining({ credits: 0, outputTokens: 0 })]);
    const rows = all.filter((r) => r.outcome === "ok");
    expect(rows).toHaveLength(1);
    // The provider's own token counts (the loopback upstream says 1 and 1), not estimates.
    expect(rows[0]).toMatchObject({ model: "svc-70b", credits: 1, inputTokens: 1, outputTokens: 1, tokensEstimated: false });
  });
});
