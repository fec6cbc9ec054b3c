import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { continueWalk, historyBudget, promptOf } from "../src/features/chat/branch";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";

// The history a message sends its model, when the branch read last time is kept in memory
// (src/features/chat/branch.ts, KnownBranch): it must be what a process that keeps nothing
// sends, whatever happened to the conversation meanwhile, and it must save the reading.

const WINDOW = 2048;

let up: FakeUpstream;
let h: Harness;
/** How many messages each walk up a branch returned, in order. */
let walks: number[] = [];

beforeAll(async () => {
  up = await startFakeUpstream();
  const models = JSON.stringify([{ id: "svc-70b", protocol: "openai", baseUrl: up.baseUrl, contextWindow: WINDOW, default: true }]);
  h = await createHarness({
    env: { MODELS: models, DAILY_CREDITS: "1000" },
    onRows: (sql, rows) => {
      if (sql.includes("with recursive branch")) walks.push(rows);
    },
  });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  walks = [];
  up.reply = (req) => `echo ${String(req.body.messages.at(-1)?.content).slice(0, 40)} ${"y".repeat(Number(req.body.messages.length) * 37 % 400)}`;
});

interface Reply {
  contextId: string;
  messageId: string;
  parentId: string;
}
interface Message {
  id: string;
  role: "user" | "assistant";
  content: string;
}

type Requester = (path: string, init: { method?: string; json?: unknown }) => Promise<Response>;

function requester(token: string, app?: ReturnType<Harness["anotherProcess"]>): Requester {
  return (path, init) => {
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const body = init.json === undefined ? undefined : JSON.stringify(init.json);
    return app ? Promise.resolve(app.request(path, { method: init.method ?? "GET", headers, body })) : h.request(path, { method: init.method ?? "GET", token, json: init.json });
  };
}

async function ok<T>(res: Promise<Response>): Promise<T> {
  const r = await res;
  expect(r.status, await r.clone().text()).toBe(200);
  return (await r.json()) as T;
}

/** What a process that keeps nothing sends: the stored branch above `questionId`, trimmed by the window. */
async function expectedPrompt(request: Requester, contextId: string, replyId: string, questionId: string) {
  const { messages, instructions } = await ok<{ messages: Message[]; instructions: string | null }>(request(`/contexts/${contextId}?leaf=${replyId}&limit=500`, {}));
  const at = messages.findIndex((m) => m.id === questionId);
  expect(at).toBeGreaterThanOrEqual(0);
  const question = messages[at]!.content;
  const newestFirst = messages.slice(0, at).reverse();
  return promptOf(instructions, newestFirst, historyBudget(WINDOW, question, instructions), question);
}

/** A small deterministic generator (mulberry32), so that a failure repeats. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("the branch a process keeps", () => {
  it("sends what a process that keeps nothing sends, through sends, edits, regenerations, a switched branch and another process's messages", async () => {
    const token = await h.signIn("known-branches");
    const here = requester(token);
    const next = random(25);
    const text = (i: number) => `m${i} ${"lorem ipsum ".repeat(Math.floor(next() * 50))}`.trim();
    const first = await ok<Reply>(here("/chat/send", { method: "POST", json: { message: text(0) } }));
    const contextId = first.contextId;
    const replies = [first.messageId];
    const kinds = new Set<string>();
    for (let i = 1; i <= 70; i++) {
      const roll = next();
      // Another process (another device's, or a Worker's other isolate) keeps nothing of this one's.
      const request = roll < 0.2 ? requester(token, h.anotherProcess()) : here;
      let reply: Reply;
      if (roll < 0.6) {
        kinds.add(roll < 0.2 ? "another process" : "send");
        reply = await ok<Reply>(request("/chat/send", { method: "POST", json: { message: text(i), contextId } }));
      } else if (roll < 0.75) {
        kinds.add("edit");
        const parentId = replies[Math.floor(next() * replies.length)]!;
        reply = await ok<Reply>(request("/chat/send", { method: "POST", json: { message: text(i), contextId, parentId } }));
      } else if (roll < 0.87) {
        kinds.add("regenerate");
        const last = replies.at(-1)!;
        reply = await ok<Reply>(request(`/contexts/${contextId}/messages/${last}/regenerate`, { method: "POST", json: {} }));
      } else {
        kinds.add("switch");
        const leafId = replies[Math.floor(next() * replies.length)]!;
        expect((await request(`/contexts/${contextId}`, { method: "PATCH", json: { leafId } })).status).toBe(200);
        reply = await ok<Reply>(request("/chat/send", { method: "POST", json: { message: text(i), contextId } }));
      }
      replies.push(reply.messageId);
      expect(up.requests.at(-1)!.body.messages, `step ${i}`).toEqual(await expectedPrompt(here, contextId, reply.messageId, reply.parentId));
    }
    expect([...kinds].sort()).toEqual(["another process", "edit", "regenerate", "send", "switch"]);
    // The window slid: the first message is long gone from what is sent.
    expect(up.requests.at(-1)!.body.messages.some((m) => String(m.content).startsWith("m0"))).toBe(false);
  });

  it("reads only what was added since, once a conversation is longer than its window", async () => {
    const token = await h.signIn("known-branches-reads");
    const here = requester(token);
    const long = (i: number) => `q${i} ${"water the fern ".repeat(20)}`;
    const sendIn = async (request: Requester, i: number, contextId?: string) => {
      const reply = await ok<Reply>(request("/chat/send", { method: "POST", json: { message: long(i), contextId } }));
      expect(up.requests.at(-1)!.body.messages, `message ${i}`).toEqual(await expectedPrompt(here, reply.contextId, reply.messageId, reply.parentId));
      return reply;
    };
    const { contextId } = await sendIn(here, 0);
    for (let i = 1; i < 20; i++) await sendIn(here, i, contextId);
    // The second message read the first exchange; each after it, the exchange before it and
    // where the last read ended: three messages, however long the conversation.
    expect(walks).toEqual([2, ...Array(18).fill(3)]);
    expect(up.requests.at(-1)!.body.messages.some((m) => String(m.content).startsWith("q0 "))).toBe(false);

    // A process that keeps nothing reads the window whole.
    walks = [];
    await sendIn(requester(token, h.anotherProcess()), 20, contextId);
    expect(walks).toHaveLength(1);
    expect(walks[0]).toBeGreaterThan(10);

    // This one reads the two exchanges it did not see, then goes on through what it kept.
    walks = [];
    await sendIn(here, 21, contextId);
    expect(walks).toEqual([5]);
  });

  it("reads the branch whole when what it kept is too short for the window of the message", async () => {
    const token = await h.signIn("known-branches-short");
    const here = requester(token);
    const sized = (i: number, length: number) => `s${i} `.padEnd(length, "z");
    const replies = [await ok<Reply>(here("/chat/send", { method: "POST", json: { message: sized(0, 300) } }))];
    const { contextId } = replies[0]!;
    // Long messages leave little room for history: what is kept is cut to it.
    for (let i = 1; i < 12; i++) replies.push(await ok<Reply>(here("/chat/send", { method: "POST", json: { message: sized(i, 3000), contextId } })));
    // The last message again, edited short, after the reply where the kept branch starts:
    // it leaves room for more than was kept.
    walks = [];
    const edited = await ok<Reply>(here("/chat/send", { method: "POST", json: { message: sized(12, 10), contextId, parentId: replies[10]!.messageId } }));
    expect(walks).toHaveLength(2);
    expect(walks[0]).toBe(1);
    expect(walks[1]).toBeGreaterThan(2);
    expect(up.requests.at(-1)!.body.messages).toEqual(await expectedPrompt(here, contextId, edited.messageId, edited.parentId));
  });
});

describe("continueWalk", () => {
  const row = (i: number, tokens = 10) => ({ id: `m${i}`, role: i % 2 ? ("user" as const) : ("assistant" as const), content: `${i}`, tokens });
  const rows = (from: number, to: number, tokens = 10) => Array.from({ length: to - from }, (_, k) => row(from + k, tokens));
  const ids = (walk: { rows: Array<{ id: string }> }) => walk.rows.map((r) => r.id);

  it("goes on through the known branch from where the walk stopped, by the walk's own rules", () => {
    const known = continueWalk(rows(2, 12), undefined, 1_000, true);
    expect(known).toMatchObject({ whole: true, short: false });
    // Read: two new messages, then the known one's first.
    const walked = continueWalk([row(0), row(1), row(2)], known, 1_000, true);
    expect(ids(walked)).toEqual(ids({ rows: rows(0, 12) }));
    expect(walked).toMatchObject({ whole: true, short: false });
    // A budget of 35 tokens: read on while at most 35 are read, the message that passes it included.
    const cut = continueWalk([row(0), row(1), row(2)], known, 35, true);
    expect(ids(cut)).toEqual(["m0", "m1", "m2", "m3"]);
    expect(cut).toMatchObject({ whole: false, short: false });
    // Not counting the first message (a regenerated reply's question): one more.
    expect(continueWalk([row(0), row(1), row(2)], known, 35, false).rows).toHaveLength(5);
  });

  it("says when the known branch ends before the walk would, and ignores one the walk did not reach", () => {
    const partial = continueWalk(rows(2, 12), undefined, 50, true);
    expect(partial).toMatchObject({ whole: false, short: false });
    expect(partial.rows).toHaveLength(6);
    expect(continueWalk([row(0), row(1), row(2)], partial, 1_000, true).short).toBe(true);
    expect(continueWalk([row(0), row(1), row(2)], partial, 70, true)).toMatchObject({ short: false, whole: false });
    const other = continueWalk(rows(5, 10), undefined, 1_000, true);
    expect(continueWalk([row(0), row(1)], other, 1_000, true)).toMatchObject({ whole: true, short: false });
    expect(continueWalk([row(0), row(1)], other, 1_000, true).rows).toHaveLength(2);
  });

  it("stops at 1,000 messages, which is as whole as a branch is ever needed", () => {
    const deep = continueWalk(rows(0, 600, 1), continueWalk(rows(599, 1_400, 1), undefined, 10_000, true), 10_000, true);
    expect(deep.rows).toHaveLength(1_000);
    expect(deep).toMatchObject({ whole: true, short: false });
  });
});
