import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse, type SseEvent } from "./support/sse";
import { expectError } from "./support/expect-error";
import { placeReply } from "../src/features/chat/background";
import { HOLD_MARGIN_MS } from "../src/features/chat/holds";
import { openMessage } from "../src/features/chat/send";
import { userIdFor } from "../src/platform/auth/identity";

// Replies in the background (`background: true`): they run to their end whatever their
// connection does, can be followed from any request and from where a client left off, and
// stop on request, keeping what was written. Over a real HTTP server on loopback, so that a
// client going away is a connection closing.

let up: FakeUpstream;
let h: Harness;
let base: string;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, DAILY_CREDITS: "10", TITLES: "off" } });
  base = await h.listen();
});
afterAll(async () => {
  up.releaseHeld();
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.holds = undefined;
  up.reply = (req) => `echo: ${[...req.body.messages].reverse().find((m) => m.role === "user")?.content ?? ""}`;
});

/** A request over the network, as a browser makes it. */
function call(path: string, token: string, init: { method?: string; json?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, ...init.headers };
  if (init.json !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${base}${path}`, { method: init.method ?? "GET", headers, body: init.json === undefined ? undefined : JSON.stringify(init.json), signal: init.signal });
}

/** Reads a stream's events as they arrive, until `enough` says so (then the connection is dropped) or the stream ends. */
async function readEvents(res: Response, enough: (events: SseEvent[]) => boolean = () => false, drop?: AbortController): Promise<SseEvent[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return parseSse(text);
    text += decoder.decode(value, { stream: true });
    const complete = parseSse(text.slice(0, text.lastIndexOf("\n\n") + 2));
    if (enough(complete)) {
      drop?.abort();
      await reader.cancel().catch(() => undefined);
      return complete;
    }
  }
}

const deltas = (events: SseEvent[]) => events.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta: string }).delta).join("");

async function credits(token: string) {
  return (await (await call("/credits", token)).json()) as { used: number };
}

/** Sends a held message in the background and reads up to its first delta; the reply goes on until up.releaseHeld(). */
async function startHeld(token: string, body: Record<string, unknown> = {}) {
  up.holds = () => true;
  const drop = new AbortController();
  const res = await call("/chat/send", token, { method: "POST", json: { message: "tell me a long story", stream: true, background: true, ...body }, signal: drop.signal });
  expect(res.status).toBe(200);
  const events = await readEvents(res, (e) => e.some((x) => x.event === "message"), drop);
  const started = JSON.parse(events.find((e) => e.event === "started")!.data) as { contextId: string; messageId: string; replyId: string };
  return { ...started, events };
}

/** Follows a reply to its end through the stream endpoint. */
async function follow(token: string, contextId: string, replyId: string, lastEventId?: string) {
  const res = await call(`/contexts/${contextId}/messages/${replyId}/stream`, token, { headers: lastEventId ? { "Last-Event-ID": lastEventId } : {} });
  expect(res.status).toBe(200);
  return readEvents(res);
}

describe("a reply in the background", () => {
  it("runs to its end after its client goes away, is stored and charged once, and shows as running meanwhile", async () => {
    const token = await h.signIn("bg-leaves");
    const cancelledBefore = up.cancelled();
    const { contextId, messageId, replyId, events } = await startHeld(token);
    expect(events[0]).toMatchObject({ event: "started" });
    expect(events.find((e) => e.event === "message")!.id).toMatch(/^\d+$/);

    // The client is gone; the conversation and the person's message are already there.
    const during = (await (await call(`/contexts/${contextId}`, token)).json()) as { messages: Array<{ id: string; role: string }>; running: { replyId: string; parentId: string } | null };
    expect(during.messages.map((m) => m.id)).toEqual([messageId]);
    expect(during.running).toMatchObject({ replyId, parentId: messageId });
    const list = (await (await call("/contexts", token)).json()) as { items: Array<{ id: string; answering: boolean }> };
    expect(list.items.find((c) => c.id === contextId)?.answering).toBe(true);

    up.releaseHeld();
    const rest = await follow(token, contextId, replyId);
    expect(rest.at(-1)).toMatchObject({ event: "done" });
    expect(JSON.parse(rest.at(-1)!.data)).toMatchObject({ messageId: replyId, contextId, parentId: messageId, status: "done" });

    const after = (await (await call(`/contexts/${contextId}`, token)).json()) as {
      messages: Array<{ id: string; role: string; content: string; status?: string }>;
      running: unknown;
      messageCount: number;
    };
    expect(after.running).toBeNull();
    expect(after.messageCount).toBe(2);
    expect(after.messages.map((m) => [m.role, m.status])).toEqual([
      ["user", undefined],
      ["assistant", "done"],
    ]);
    expect(after.messages[1]!.content).toBe(deltas(rest));
    expect(after.messages[1]!.content).toMatch(/^echo: tell me a long story/);
    expect(await credits(token)).toMatchObject({ used: 1 });
    expect(up.cancelled()).toBe(cancelledBefore); // the model was never hung up on
  });

  it("is followed from Last-Event-ID: the rest of the text, whole, then done", async () => {
    const token = await h.signIn("bg-resume");
    const { contextId, replyId, events } = await startHeld(token);
    const first = events.filter((e) => e.event === "message");
    const had = deltas(first);
    const lastId = first.at(-1)!.id!;
    expect(Number(lastId)).toBe(had.length);

    const following = follow(token, contextId, replyId, lastId);
    up.releaseHeld();
    const rest = await following;
    const stored = (await (await call(`/contexts/${contextId}`, token)).json()) as { messages: Array<{ content: string }> };
    expect(had + deltas(rest)).toBe(stored.messages[1]!.content);
    // Each event's id is the length so far.
    let length = had.length;
    for (const e of rest.filter((x) => x.event === "message")) {
      length += (JSON.parse(e.data) as { delta: string }).delta.length;
      expect(Number(e.id)).toBe(length);
    }

    // Once ended, the stream answers the stored text from the offset, then done.
    const again = await follow(token, contextId, replyId, "6");
    expect(deltas(again)).toBe(stored.messages[1]!.content.slice(6));
    expect(again.at(-1)).toMatchObject({ event: "done" });
  });

  it("answers JSON without stream, with the whole reply, and keeps it as any reply", async () => {
    const token = await h.signIn("bg-json");
    const res = await call("/chat/send", token, { method: "POST", json: { message: "water?", background: true } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { response: string; status: string; messageId: string; contextId: string };
    expect(body).toMatchObject({ response: "echo: water?", status: "done" });
    const stored = (await (await call(`/contexts/${body.contextId}`, token)).json()) as { messages: Array<{ id: string; content: string }> };
    expect(stored.messages.map((m) => m.content)).toEqual(["water?", "echo: water?"]);
  });

  it("is 404 to another person, and for an unknown reply", async () => {
    const owner = await h.signIn("bg-owner");
    const other = await h.signIn("bg-other");
    const { contextId, replyId } = await startHeld(owner);
    try {
      await expectError(await call(`/contexts/${contextId}/messages/${replyId}/stream`, other), 404, undefined, "message_not_found");
      await expectError(await call(`/contexts/${contextId}/messages/${replyId}/stop`, other, { method: "POST" }), 404, undefined, "message_not_found");
      await expectError(await call(`/contexts/${contextId}/messages/msg_AAAAAAAAAAAAAAAAAAAAAA/stream`, owner), 404, undefined, "message_not_found");
      await expectError(await call(`/contexts/${contextId}/messages/${replyId}/stream`, owner, { headers: { "Last-Event-ID": "abc" } }), 400, undefined, "invalid_request");
    } finally {
      up.releaseHeld();
      await follow(owner, contextId, replyId);
    }
  });
});

describe("Stop", () => {
  it("keeps the person's message and the partial reply, marked stopped, charged once", async () => {
    const token = await h.signIn("stop-keeps");
    const { contextId, messageId, replyId } = await startHeld(token);
    const res = await call(`/contexts/${contextId}/messages/${replyId}/stop`, token, { method: "POST" });
    expect(res.status).toBe(200);
    const { message } = (await res.json()) as { message: { id: string; content: string; status: string; parentId: string } };
    expect(message).toMatchObject({ id: replyId, status: "stopped", parentId: messageId });
    expect(message.content).toMatch(/^echo: /);

    // After a reload: both there, the reply stopped, and nothing running.
    const stored = (await (await call(`/contexts/${contextId}`, token)).json()) as {
      messages: Array<{ role: string; content: string; status?: string }>;
      running: unknown;
      leafId: string;
    };
    expect(stored.running).toBeNull();
    expect(stored.leafId).toBe(replyId);
    expect(stored.messages.map((m) => [m.role, m.status])).toEqual([
      ["user", undefined],
      ["assistant", "stopped"],
    ]);
    expect(stored.messages[1]!.content).toBe(message.content);
    expect(await credits(token)).toMatchObject({ used: 1 });

    // A stopped reply can be answered again.
    up.holds = undefined;
    const again = await call(`/contexts/${contextId}/messages/${replyId}/regenerate`, token, { method: "POST", json: { background: true } });
    expect(((await again.json()) as { status: string }).status).toBe("done");
    expect(await credits(token)).toMatchObject({ used: 2 });
  });

  it("refunds a reply stopped before the model wrote a word, and keeps the person's message", async () => {
    const token = await h.signIn("stop-early");
    up.mode = "slow"; // the model never answers
    const drop = new AbortController();
    const res = await call("/chat/send", token, { method: "POST", json: { message: "are you there?", stream: true, background: true }, signal: drop.signal });
    const events = await readEvents(res, (e) => e.some((x) => x.event === "started"), drop);
    const { contextId, replyId } = JSON.parse(events[0]!.data) as { contextId: string; replyId: string };
    expect(await credits(token)).toMatchObject({ used: 1 }); // held while it runs

    const stopped = (await (await call(`/contexts/${contextId}/messages/${replyId}/stop`, token, { method: "POST" })).json()) as { message: { status: string; content: string } };
    expect(stopped.message).toMatchObject({ status: "stopped", content: "" });
    expect(await credits(token)).toMatchObject({ used: 0 });
    const stored = (await (await call(`/contexts/${contextId}`, token)).json()) as { messages: Array<{ role: string; content: string }> };
    expect(stored.messages.map((m) => m.content)).toEqual(["are you there?", ""]);

    // The empty reply is not sent to the model with the next message.
    up.mode = "ok";
    let sent: Array<{ role: string; content: unknown }> = [];
    up.onRequest = (req) => (sent = req.body.messages as typeof sent);
    try {
      await call("/chat/send", token, { method: "POST", json: { message: "hello?", contextId } });
    } finally {
      up.onRequest = undefined;
    }
    expect(sent.map((m) => m.role)).toEqual(["user", "user"]);
  });

  it("answers a reply that already ended as it is", async () => {
    const token = await h.signIn("stop-late");
    const body = (await (await call("/chat/send", token, { method: "POST", json: { message: "hi", background: true } })).json()) as { contextId: string; messageId: string };
    const res = await call(`/contexts/${body.contextId}/messages/${body.messageId}/stop`, token, { method: "POST" });
    expect(((await res.json()) as { message: { status: string; content: string } }).message).toMatchObject({ status: "done", content: "echo: hi" });
    expect(await credits(token)).toMatchObject({ used: 1 });
  });
});

describe("a reply's rating", () => {
  it("is stored on a reply, shown with it, and refused on a question or another's reply", async () => {
    const token = await h.signIn("rater");
    const body = (await (await call("/chat/send", token, { method: "POST", json: { message: "rate me" } })).json()) as { contextId: string; messageId: string; parentId: string };
    const path = `/contexts/${body.contextId}/messages/${body.messageId}/rating`;
    expect(await (await call(path, token, { method: "PUT", json: { rating: "up" } })).json()).toEqual({ rating: "up" });
    const read = async () => ((await (await call(`/contexts/${body.contextId}`, token)).json()) as { messages: Array<{ rating?: string | null }> }).messages.map((m) => m.rating);
    expect(await read()).toEqual([undefined, "up"]);
    await call(path, token, { method: "PUT", json: { rating: null } });
    expect(await read()).toEqual([undefined, null]);

    await expectError(await call(`/contexts/${body.contextId}/messages/${body.parentId}/rating`, token, { method: "PUT", json: { rating: "down" } }), 404, undefined, "message_not_found");
    await expectError(await call(path, await h.signIn("not-rater"), { method: "PUT", json: { rating: "down" } }), 404, undefined, "message_not_found");
    await expectError(await call(path, token, { method: "PUT", json: { rating: "meh" } }), 400, undefined, "invalid_request");
  });
});

describe("a reply whose process died", () => {
  it("ends failed and refunded once its hold is stale, with the person's message kept, and its followers told", async () => {
    const token = await h.signIn("bg-died");
    expect((await call("/me", token)).status).toBe(200);
    const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { iss: string; sub: string };
    const userId = await userIdFor(payload.iss, payload.sub);
    // Placed, then never run: what a process killed mid-reply leaves.
    const opened = await openMessage(h.deps, { principal: { via: "api-key", userId, keyId: "died" }, turn: { kind: "send", message: "still there?" }, requestId: "req-died" });
    if (opened.kind !== "ready") throw new Error("expected a charged exchange");
    const placed = await placeReply(h.deps, opened);
    expect(await credits(token)).toMatchObject({ used: 1 });

    h.clock.advance(h.deps.config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS + 1);
    // A follower notices the reply is no longer being written.
    const followed = await follow(token, placed.contextId, placed.replyId);
    expect(followed.at(-1)).toMatchObject({ event: "error" });
    expect(JSON.parse(followed.at(-1)!.data)).toMatchObject({ code: "reply_lost" });

    // The next message's opening batch releases it: refunded, kept as a failed reply.
    const next = await call("/chat/send", token, { method: "POST", json: { message: "hello again" } });
    expect(next.status).toBe(200);
    const stored = (await (await call(`/contexts/${placed.contextId}`, token)).json()) as {
      running: unknown;
      leafId: string;
      messageCount: number;
      messages: Array<{ content: string; status?: string }>;
    };
    expect(stored.running).toBeNull();
    expect(stored).toMatchObject({ leafId: placed.replyId, messageCount: 2 });
    expect(stored.messages.map((m) => [m.content, m.status])).toEqual([
      ["still there?", undefined],
      ["", "failed"],
    ]);
    expect(await credits(token)).toMatchObject({ used: 1 }); // the new message only
    h.clock.set("2026-11-22T12:00:00.000Z");
  });
});
