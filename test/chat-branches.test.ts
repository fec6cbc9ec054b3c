import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { creditDays, usageEvents } from "../schema/index";
import { userIdFor } from "../src/platform/auth/identity";
import { TITLE_INSTRUCTIONS } from "../src/features/chat/titles";
import { parseConfig } from "../src/platform/config";
import { createRuntime } from "../src/platform/deps";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { parseSse } from "./support/sse";

// Chat on a tree of messages: sending after a chosen reply (an edit), regenerating a reply,
// the instructions sent first, and the title the model gives a new context.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: "2000", DAILY_CREDITS: "100" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(async () => {
  await h.settled();
  up.mode = "ok";
  up.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  up.title = () => "";
  up.titleMode = "ok";
  up.onRequest = undefined;
});

interface Reply {
  response: string;
  model: string;
  contextId: string;
  messageId: string;
  parentId: string;
  credits: { used: number; remaining: number };
}
interface Message {
  id: string;
  role: string;
  content: string;
  parentId: string | null;
  siblingIds: string[];
}
interface ContextWithMessages {
  name: string;
  nameSource: string;
  leafId: string | null;
  messageCount: number;
  instructions: string | null;
  messages: Message[];
}

async function ok<T>(res: Response | Promise<Response>): Promise<T> {
  const r = await res;
  expect(r.status, await r.clone().text()).toBe(200);
  return (await r.json()) as T;
}
const send = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  h.request("/chat/send", { method: "POST", token, json: body, headers });
const regenerate = (token: string, contextId: string, messageId: string, body?: Record<string, unknown>, headers: Record<string, string> = {}) =>
  h.request(`/contexts/${contextId}/messages/${messageId}/regenerate`, { method: "POST", token, json: body, headers });
const read = (token: string, contextId: string, query = "") => ok<ContextWithMessages>(h.request(`/contexts/${contextId}${query}`, { token }));
const creditsUsed = async (token: string) => (await ok<{ used: number }>(h.request("/credits", { token }))).used;
const contents = (c: ContextWithMessages) => c.messages.map((m) => m.content);
/** What the model was sent last, as role: content lines. */
const lastPrompt = () => up.requests.at(-1)!.body.messages.map((m) => `${m.role}: ${m.content}`);

/** A conversation of two exchanges: q1 a1 q2 a2. */
async function conversation(token: string) {
  const first = await ok<Reply>(send(token, { message: "q1" }));
  const second = await ok<Reply>(send(token, { message: "q2", contextId: first.contextId }));
  return { contextId: first.contextId, q1: first.parentId, a1: first.messageId, q2: second.parentId, a2: second.messageId };
}

describe("POST /chat/send with parentId", () => {
  it("sends an edited message after the reply its original followed: a new branch, made the active one", async () => {
    const token = await h.signIn("editor");
    const c = await conversation(token);
    const edited = await ok<Reply>(send(token, { message: "q2, edited", contextId: c.contextId, parentId: c.a1 }));
    // The model saw the branch up to the parent, not the replaced message or its reply.
    expect(lastPrompt()).toEqual(["user: q1", "assistant: echo: q1", "user: q2, edited"]);

    const context = await read(token, c.contextId);
    expect(context.leafId).toBe(edited.messageId);
    expect(context.messageCount).toBe(6);
    expect(contents(context)).toEqual(["q1", "echo: q1", "q2, edited", "echo: q2, edited"]);
    expect(context.messages[2]).toMatchObject({ id: edited.parentId, parentId: c.a1, siblingIds: [c.q2, edited.parentId] });
    // The replaced branch is still there.
    expect(contents(await read(token, c.contextId, `?leaf=${c.q2}`))).toEqual(["q1", "echo: q1", "q2", "echo: q2"]);
    // A message without parentId continues the active (edited) branch.
    await ok<Reply>(send(token, { message: "q3", contextId: c.contextId }));
    expect(lastPrompt()).toEqual(["user: q1", "assistant: echo: q1", "user: q2, edited", "assistant: echo: q2, edited", "user: q3"]);
  });

  it("continues the branch it is told to, whichever is active", async () => {
    const token = await h.signIn("branch-hopper");
    const c = await conversation(token);
    await ok<Reply>(send(token, { message: "other q2", contextId: c.contextId, parentId: c.a1 }));
    // Back on the first branch (a client showing it), after its last reply.
    const reply = await ok<Reply>(send(token, { message: "q3", contextId: c.contextId, parentId: c.a2 }));
    expect(lastPrompt()).toEqual(["user: q1", "assistant: echo: q1", "user: q2", "assistant: echo: q2", "user: q3"]);
    expect((await read(token, c.contextId)).leafId).toBe(reply.messageId);
  });

  it("with parentId null, sends a new first message: an edit of the first message", async () => {
    const token = await h.signIn("first-editor");
    const c = await conversation(token);
    const edited = await ok<Reply>(send(token, { message: "q1 again", contextId: c.contextId, parentId: null }));
    expect(lastPrompt()).toEqual(["user: q1 again"]);
    const context = await read(token, c.contextId);
    expect(contents(context)).toEqual(["q1 again", "echo: q1 again"]);
    expect(context.messages[0]).toMatchObject({ parentId: null, siblingIds: [c.q1, edited.parentId] });
  });

  it("refuses, charging nothing, a parent that is a user message, not in the context, or another person's", async () => {
    const token = await h.signIn("bad-parent");
    const c = await conversation(token);
    const other = await conversation(await h.signIn("other-parent"));
    const used = await creditsUsed(token);
    await expectError(await send(token, { message: "x", contextId: c.contextId, parentId: c.q2 }), 400, /parentId: message .* is a user message/, "parent_not_a_reply");
    await expectError(await send(token, { message: "x", contextId: c.contextId, parentId: "msg_nope" }), 404, /parentId: message msg_nope is not a message of context/, "message_not_found");
    await expectError(await send(token, { message: "x", contextId: c.contextId, parentId: other.a1 }), 404, undefined, "message_not_found");
    await expectError(await send(token, { message: "x", parentId: c.a1 }), 400, /parentId: needs contextId/);
    expect(await creditsUsed(token)).toBe(used);
    expect((await read(token, c.contextId)).messageCount).toBe(4);
  });
});

describe("POST /contexts/{id}/messages/{messageId}/regenerate", () => {
  it("answers the same user message again for a credit: a sibling of the reply, made the active branch", async () => {
    const token = await h.signIn("regenerator");
    const c = await conversation(token);
    const used = await creditsUsed(token);
    up.reply = () => "a better answer";
    const res = await regenerate(token, c.contextId, c.a2);
    const reply = await ok<Reply>(res);
    expect(res.headers.get("x-credits-remaining")).toBe(String(reply.credits.remaining));
    expect(reply).toMatchObject({ response: "a better answer", contextId: c.contextId, parentId: c.q2, credits: { used: used + 1 } });
    expect(lastPrompt()).toEqual(["user: q1", "assistant: echo: q1", "user: q2"]);
    const context = await read(token, c.contextId);
    expect(context.leafId).toBe(reply.messageId);
    expect(context.messageCount).toBe(5);
    expect(context.messages.at(-1)).toMatchObject({ id: reply.messageId, parentId: c.q2, siblingIds: [c.a2, reply.messageId] });
    // Its usage record names the new reply.
    const usage = await h.db.select().from(usageEvents).where(eq(usageEvents.messageId, reply.messageId));
    expect(usage).toEqual([expect.objectContaining({ contextId: c.contextId, credits: 1 })]);
  });

  it("streams like /chat/send, and replays a retry with the same Idempotency-Key uncharged", async () => {
    const token = await h.signIn("regenerate-stream");
    const c = await conversation(token);
    up.reply = () => "streamed again";
    const key = { "Idempotency-Key": "regen-1" };
    const res = await regenerate(token, c.contextId, c.a1, { stream: true }, key);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta: string }).delta).join("")).toBe("streamed again");
    const done = JSON.parse(events.at(-1)!.data) as Omit<Reply, "response">;
    expect(events.at(-1)!.event).toBe("done");
    expect(done).toMatchObject({ contextId: c.contextId, parentId: c.q1 });
    const used = await creditsUsed(token);
    const again = await regenerate(token, c.contextId, c.a1, {}, key);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(((await again.json()) as Reply).messageId).toBe(done.messageId);
    expect(await creditsUsed(token)).toBe(used);
    // The first reply's branch (q2, a2) is a sibling's now: the new reply ends the active branch.
    expect(contents(await read(token, c.contextId))).toEqual(["q1", "streamed again"]);
  });

  it("refuses, charging nothing, a user message, an unknown message and another person's context", async () => {
    const token = await h.signIn("regenerate-refused");
    const c = await conversation(token);
    const used = await creditsUsed(token);
    await expectError(await regenerate(token, c.contextId, c.q1), 400, /cannot be regenerated: it is a user message/, "not_a_reply");
    await expectError(await regenerate(token, c.contextId, "msg_nope"), 404, /messageId: message msg_nope is not a message of context/, "message_not_found");
    await expectError(await regenerate(await h.signIn("stranger"), c.contextId, c.a1), 404, undefined, "context_not_found");
    await expectError(await regenerate(token, "ctx_nope", c.a1), 404, undefined, "context_not_found");
    expect(await creditsUsed(token)).toBe(used);
  });

  it("with the day's credits used up, is refused for the credits, not as a reply that answers nothing", async () => {
    const token = await h.signIn("regenerate-broke");
    const c = await conversation(token);
    const { id } = await ok<{ id: string }>(h.request("/me", { token }));
    await h.db.update(creditDays).set({ used: 100 }).where(eq(creditDays.userId, id));
    await expectError(await regenerate(token, c.contextId, c.a2), 402, /insufficient credits: all 100 of today's credits are used/, "credits_used_up");
    await expectError(await send(token, { message: "q3", contextId: c.contextId, parentId: c.a1 }), 402, /insufficient credits/, "credits_used_up");
  });

  it("refunds when the model fails, and stores nothing", async () => {
    const token = await h.signIn("regenerate-fails");
    const c = await conversation(token);
    const used = await creditsUsed(token);
    up.mode = "fail";
    await expectError(await regenerate(token, c.contextId, c.a2), 502, undefined, "model_failed");
    expect(await creditsUsed(token)).toBe(used);
    expect((await read(token, c.contextId)).messageCount).toBe(4);
  });
});

describe("instructions", () => {
  it("go to the model first, before the branch, on every message and on a regenerated reply", async () => {
    const token = await h.signIn("instructed");
    const c = await conversation(token);
    await ok(h.request(`/contexts/${c.contextId}`, { method: "PATCH", token, json: { instructions: "Answer in metric units." } }));
    await ok(send(token, { message: "how tall?", contextId: c.contextId }));
    expect(lastPrompt()).toEqual(["system: Answer in metric units.", "user: q1", "assistant: echo: q1", "user: q2", "assistant: echo: q2", "user: how tall?"]);
    await ok(regenerate(token, c.contextId, c.a1));
    expect(lastPrompt()).toEqual(["system: Answer in metric units.", "user: q1"]);
  });

  it("start a new context with /chat/send, and are refused beside a contextId", async () => {
    const token = await h.signIn("preset-user");
    const reply = await ok<Reply>(send(token, { message: "hello", instructions: "You are a gardening coach." }));
    expect(lastPrompt()).toEqual(["system: You are a gardening coach.", "user: hello"]);
    expect((await read(token, reply.contextId)).instructions).toBe("You are a gardening coach.");
    await expectError(await send(token, { message: "x", contextId: reply.contextId, instructions: "other" }), 400, /instructions: only for a new context/);
  });

  it("go first on /v1 with context_id, before the caller's own system messages", async () => {
    const token = await h.signIn("v1-instructed");
    const created = await h.request("/keys", { method: "POST", token, json: {} });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const c = await conversation(token);
    await ok(send(token, { message: "other q2", contextId: c.contextId, parentId: c.a1 }));
    // Back to the first branch, the one /v1 continues.
    await ok(h.request(`/contexts/${c.contextId}`, { method: "PATCH", token, json: { instructions: "Context rule.", leafId: c.q2 } }));
    const res = await h.request("/v1/chat/completions", {
      method: "POST",
      headers: { Authorization: `Bearer ${key}` },
      json: { model: "svc-70b", context_id: c.contextId, messages: [{ role: "system", content: "Caller rule." }, { role: "user", content: "q3" }] },
    });
    expect(res.status).toBe(200);
    // The active branch: the other q2 and its reply are not in it.
    expect(lastPrompt()).toEqual(["system: Context rule.", "system: Caller rule.", "user: q1", "assistant: echo: q1", "user: q2", "assistant: echo: q2", "user: q3"]);
    const context = await read(token, c.contextId);
    expect(contents(context)).toEqual(["q1", "echo: q1", "q2", "echo: q2", "q3", "echo: q3"]);
    expect(context.messages[4]!.parentId).toBe(c.a2);
  });
});

describe("titles", () => {
  it("are written by the model after a new context's first reply, free, replacing its first words", async () => {
    const token = await h.signIn("titled");
    up.title = () => '"Monstera watering."';
    const reply = await ok<Reply>(send(token, { message: "How often should I water a monstera in a north-facing flat?" }));
    expect((await read(token, reply.contextId)).nameSource).toMatch(/message|model/);
    await h.settled();
    const context = await read(token, reply.contextId);
    expect(context).toMatchObject({ name: "Monstera watering", nameSource: "model" });
    expect(await creditsUsed(token)).toBe(1);
    const [request] = up.titleRequests.slice(-1);
    expect(request!.body.messages[0]).toEqual({ role: "system", content: TITLE_INSTRUCTIONS });
    expect(request!.body.messages[1]!.content).toContain("How often should I water a monstera");
    expect(request!.body.messages[1]!.content).toContain("echo: How often should I water");
    // Only the first reply asks for one.
    const asked = up.titleRequests.length;
    await ok(send(token, { message: "and in winter?", contextId: reply.contextId }));
    await h.settled();
    expect(up.titleRequests.length).toBe(asked);
    // The new name is searchable.
    const hits = await ok<{ items: Array<{ contextId: string; messageId: string | null }> }>(h.request("/contexts/search?q=watering", { token }));
    expect(hits.items).toContainEqual(expect.objectContaining({ contextId: reply.contextId, messageId: null }));
  });

  it("leave the first words when the model fails or writes nothing", async () => {
    const token = await h.signIn("untitled");
    up.titleMode = "fail";
    const failed = await ok<Reply>(send(token, { message: "Why are my fern's leaves brown?" }));
    await h.settled();
    expect(h.logs.lines.some((l) => l.msg === "context title left as its first words" && l.fields.contextId === failed.contextId)).toBe(true);
    up.titleMode = "ok";
    up.title = () => "  \n ";
    const empty = await ok<Reply>(send(token, { message: "Best soil for cacti" }));
    await h.settled();
    expect(await read(token, failed.contextId)).toMatchObject({ name: "Why are my fern's leaves brown?", nameSource: "message" });
    expect(await read(token, empty.contextId)).toMatchObject({ name: "Best soil for cacti", nameSource: "message" });
  });

  it("never replace a name the person set, even one set while the title was being written", async () => {
    const token = await h.signIn("renamer");
    let release!: (title: string) => void;
    up.title = () => new Promise<string>((resolve) => (release = resolve));
    const reply = await ok<Reply>(send(token, { message: "orchid after flowering" }));
    await ok(h.request(`/contexts/${reply.contextId}`, { method: "PATCH", token, json: { name: "My orchid" } }));
    await expect.poll(() => up.titleRequests.length > 0 && release !== undefined).toBe(true);
    release("Orchid care");
    await h.settled();
    expect(await read(token, reply.contextId)).toMatchObject({ name: "My orchid", nameSource: "person" });
  });

  it("cost the reply no round trip: one before the model call, one after, then the title's write", async () => {
    const token = await h.signIn("title-trips");
    await ok(send(token, { message: "warm up" }));
    await h.settled();
    let release!: (title: string) => void;
    up.title = () => new Promise<string>((resolve) => (release = resolve));
    const start = h.roundTrips();
    let before = -1;
    up.onRequest = () => (before = h.roundTrips() - start);
    const reply = await ok<Reply>(send(token, { message: "a first message" }));
    expect(before).toBe(1);
    expect(h.roundTrips() - start).toBe(2);
    await expect.poll(() => release !== undefined).toBe(true);
    release("A title");
    await h.settled();
    expect(h.roundTrips() - start).toBe(3);
    expect((await read(token, reply.contextId)).name).toBe("A title");
  });
});

describe("titles, where they are seen and at the operator's price", () => {
  it("are not asked for an API key's new context: one upstream call per message", async () => {
    const token = await h.signIn("titles-key");
    const { key } = (await (await h.request("/keys", { method: "POST", token, json: { name: "k" } })).json()) as { key: string };
    const asked = up.titleRequests.length;
    let calls = 0;
    up.onRequest = () => calls++;
    const res = await h.request("/chat/send", { method: "POST", apiKey: key, json: { message: "no title for me" } });
    expect(res.status).toBe(200);
    await h.settled();
    expect(calls).toBe(1);
    expect(up.titleRequests.length).toBe(asked);
  });

  it("are asked of TITLE_MODEL with a short excerpt and few tokens, and cost the operator, not the person", async () => {
    const models = JSON.stringify([
      { id: "svc-70b", protocol: "openai", baseUrl: up.baseUrl, upstream: "big-model", default: true },
      { id: "mini", protocol: "openai", baseUrl: up.baseUrl, upstream: "mini-model" },
    ]);
    const titled = await createHarness({ env: { MODELS: models, TITLE_MODEL: "mini", MODEL_TIMEOUT_MS: "2000" } });
    try {
      const token = await titled.signIn("titles-mini");
      up.title = () => "Long questions";
      const reply = await ok<Reply>(titled.request("/chat/send", { method: "POST", token, json: { message: `${"why ".repeat(500)}?` } }));
      await titled.settled();
      const [request] = up.titleRequests.slice(-1);
      expect(request!.body.model).toBe("mini-model");
      expect(request!.body.max_tokens).toBeLessThanOrEqual(20);
      expect(String(request!.body.messages[1]!.content).length).toBeLessThan(1000);
      expect(await ok<{ name: string }>(titled.request(`/contexts/${reply.contextId}`, { token }))).toMatchObject({ name: "Long questions" });
      const userId = await userIdFor(titled.idp.issuer, "user:titles-mini");
      const rows = await titled.db.select().from(usageEvents).where(eq(usageEvents.userId, userId));
      expect(rows.map((r) => [r.kind, r.model, r.credits])).toEqual(expect.arrayContaining([["message", "svc-70b", 1], ["title", "mini", 0]]));
      // The provider's own counts (the loopback upstream says 1 and 1).
      expect(rows.find((r) => r.kind === "title")).toMatchObject({ inputTokens: 1, outputTokens: 1, tokensEstimated: false });
      // The person's history and credits show the message alone.
      const page = await ok<{ items: unknown[] }>(titled.request("/usage/messages", { token }));
      expect(page.items).toHaveLength(1);
      expect(await ok<{ used: number }>(titled.request("/credits", { token }))).toMatchObject({ used: 1 });
    } finally {
      await titled.close();
    }
  });

  it("refuse to start with a TITLE_MODEL that is not in the catalog, naming the variable", async () => {
    const config = parseConfig({ AUTH_HS256_SECRET: "x".repeat(32), AUTH_AUDIENCE: "tests", SVC_MODEL_BASE_URL: up.baseUrl, TITLE_MODEL: "no-such-model" });
    await expect(createRuntime(config)).rejects.toThrow(/TITLE_MODEL: no model 'no-such-model' in the catalog; one of .*svc-70b/);
  });

  it("are never asked with TITLES=off", async () => {
    const off = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "off" } });
    try {
      const asked = up.titleRequests.length;
      const token = await off.signIn("titles-off");
      const reply = await ok<Reply>(off.request("/chat/send", { method: "POST", token, json: { message: "Plain name please" } }));
      await off.settled();
      expect(up.titleRequests.length).toBe(asked);
      expect(await ok<{ name: string }>(off.request(`/contexts/${reply.contextId}`, { token }))).toMatchObject({ name: "Plain name please", nameSource: "message" });
    } finally {
      await off.close();
    }
  });
});

describe("usage", () => {
  it("names the reply each charge paid for, so each version's credits are on its branch", async () => {
    const token = await h.signIn("usage-branches");
    const c = await conversation(token);
    const again = await ok<Reply>(regenerate(token, c.contextId, c.a2));
    const page = await ok<{ items: Array<{ contextId: string; messageId: string | null }> }>(h.request("/usage/messages", { token }));
    expect(page.items.map((i) => i.messageId)).toEqual([again.messageId, c.a2, c.a1]);
    const userId = await userIdFor(h.idp.issuer, "user:usage-branches");
    expect((await h.db.select().from(usageEvents).where(eq(usageEvents.userId, userId))).every((u) => u.contextId === c.contextId)).toBe(true);
  });
});
