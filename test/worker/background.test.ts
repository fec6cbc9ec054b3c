import { describe, expect, it } from "vitest";
import { waitUntil } from "../../src/platform/wait-until";
import { call, signIn } from "./support";

// Replies in the background on the Worker over D1: the running reply row, the stream that
// follows it, Stop's charge and refund (test/background.test.ts covers the same on Node,
// with a client that leaves mid-reply).

interface Event {
  event: string;
  data: string;
  id?: string;
}

/** Reads a stream's events until `enough` says so (then lets the connection go) or it ends. */
async function readEvents(res: Response, enough: (events: Event[]) => boolean = () => false): Promise<Event[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const parse = (upTo: string) =>
    upTo
      .split("\n\n")
      .filter((b) => b.trim() !== "")
      .map((block) => {
        const e: Event = { event: "message", data: "" };
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) e.event = line.slice(6).trim();
          else if (line.startsWith("data:")) e.data += line.slice(5).trim();
          else if (line.startsWith("id:")) e.id = line.slice(3).trim();
        }
        return e;
      });
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return parse(text);
    text += decoder.decode(value, { stream: true });
    const events = parse(text.slice(0, text.lastIndexOf("\n\n") + 2));
    if (enough(events)) {
      await reader.cancel();
      return events;
    }
  }
}

const json = (headers: Record<string, string>, body: unknown) => ({ method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });
const deltas = (events: Event[]) => events.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta: string }).delta).join("");

describe("replies in the background on D1", () => {
  it("places the message and the running reply first, ends stored and charged, and is followed from Last-Event-ID", async () => {
    const auth = await signIn("bg-worker");
    const res = await call("/chat/send", json(auth, { message: "water the fern", stream: true, background: true }));
    expect(res.status).toBe(200);
    const events = await readEvents(res, (e) => e.some((x) => x.event === "started"));
    const { contextId, messageId, replyId } = JSON.parse(events[0]!.data) as { contextId: string; messageId: string; replyId: string };

    const follow = await readEvents(await call(`/contexts/${contextId}/messages/${replyId}/stream`, { headers: auth }));
    expect(follow.at(-1)!.event).toBe("done");
    expect(JSON.parse(follow.at(-1)!.data)).toMatchObject({ messageId: replyId, parentId: messageId, status: "done" });
    expect(deltas(follow)).toBe("echo: water the fern");

    const context = (await (await call(`/contexts/${contextId}`, { headers: auth })).json()) as {
      messageCount: number;
      running: unknown;
      messages: Array<{ role: string; content: string; status?: string }>;
    };
    expect(context).toMatchObject({ messageCount: 2, running: null });
    expect(context.messages.map((m) => [m.content, m.status])).toEqual([
      ["water the fern", undefined],
      ["echo: water the fern", "done"],
    ]);
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 1 });

    const rest = await readEvents(await call(`/contexts/${contextId}/messages/${replyId}/stream`, { headers: { ...auth, "Last-Event-ID": "6" } }));
    expect(deltas(rest)).toBe("water the fern");
  });

  it("stops a running reply: the message and the partial reply kept, charged once; the list shows it answering meanwhile", async () => {
    const auth = await signIn("bg-worker-stop");
    const res = await call("/chat/send", json(auth, { message: "(endless) a long story", stream: true, background: true }));
    const events = await readEvents(res, (e) => e.some((x) => x.event === "message"));
    const { contextId, replyId } = JSON.parse(events.find((e) => e.event === "started")!.data) as { contextId: string; replyId: string };

    const list = (await (await call("/contexts", { headers: auth })).json()) as { items: Array<{ id: string; answering: boolean }> };
    expect(list.items.find((c) => c.id === contextId)?.answering).toBe(true);
    const during = (await (await call(`/contexts/${contextId}`, { headers: auth })).json()) as { running: { replyId: string } | null };
    expect(during.running?.replyId).toBe(replyId);

    const stopped = await call(`/contexts/${contextId}/messages/${replyId}/stop`, { method: "POST", headers: auth });
    expect(stopped.status).toBe(200);
    const { message } = (await stopped.json()) as { message: { status: string; content: string } };
    expect(message.status).toBe("stopped");
    expect(message.content).toMatch(/^echo: \(endless\)/);

    const after = (await (await call(`/contexts/${contextId}`, { headers: auth })).json()) as { running: unknown; messages: Array<{ content: string; status?: string }> };
    expect(after.running).toBeNull();
    expect(after.messages.map((m) => m.status)).toEqual([undefined, "stopped"]);
    expect(after.messages[1]!.content).toBe(message.content);
    expect(await (await call("/credits", { headers: auth })).json()).toMatchObject({ used: 1 });

    // Thumbs down on it, stored on D1.
    const rated = await call(`/contexts/${contextId}/messages/${replyId}/rating`, { method: "PUT", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify({ rating: "down" }) });
    expect(await rated.json()).toEqual({ rating: "down" });
  });

  it("is 404 to another person", async () => {
    const auth = await signIn("bg-worker-owner");
    const body = (await (await call("/chat/send", json(auth, { message: "mine", background: true }))).json()) as { contextId: string; messageId: string };
    const other = await signIn("bg-worker-other");
    expect((await call(`/contexts/${body.contextId}/messages/${body.messageId}/stream`, { headers: other })).status).toBe(404);
    expect((await call(`/contexts/${body.contextId}/messages/${body.messageId}/stop`, { method: "POST", headers: other })).status).toBe(404);
  });
});

describe("waitUntil in workerd", () => {
  // On Node it answers false without asking (there is no ExecutionContext there); here the
  // work must reach the request's ExecutionContext, or the isolate may end before it is done.
  it("hands the work to the request's ExecutionContext", async () => {
    const given: Array<Promise<unknown>> = [];
    const work = Promise.resolve("done");
    expect(waitUntil({ executionCtx: { waitUntil: (p) => void given.push(p) } }, work)).toBe(true);
    expect(given).toEqual([work]);
  });
});
