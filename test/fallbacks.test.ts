import { asc, count, eq, sum } from "drizzle-orm";
import { createServer } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { creditHolds, messages, modelTimings, usageEvents } from "../schema/index";
import { userIdFor } from "../src/platform/auth/identity";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse } from "./support/sse";

// Fallbacks and measured speed, with real upstreams on loopback: one that is down (a closed
// port), one that answers 429 or 5xx or stalls, and the fallback that answers.

let primary: FakeUpstream;
let backup: FakeUpstream;
let h: Harness;
let base: string;
let downPort: number;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  primary = await startFakeUpstream();
  backup = await startFakeUpstream();
  downPort = await closedPort();
  const catalog = [
    { id: "flaky", protocol: "openai", baseUrl: primary.baseUrl, credits: 2, fallbacks: ["backup"], default: true, tools: true },
    { id: "down", protocol: "openai", baseUrl: `http://127.0.0.1:${downPort}/v1`, credits: 1, fallbacks: ["backup"] },
    { id: "backup", protocol: "openai", baseUrl: backup.baseUrl, credits: 1, tools: true },
    { id: "pricey-backup", protocol: "openai", baseUrl: backup.baseUrl, credits: 3 },
    { id: "cheap", protocol: "openai", baseUrl: primary.baseUrl, credits: 1, fallbacks: ["pricey-backup"] },
    { id: "no-tools-backup", protocol: "openai", baseUrl: backup.baseUrl, credits: 1 },
    { id: "agent", protocol: "openai", baseUrl: primary.baseUrl, credits: 1, tools: true, fallbacks: ["no-tools-backup", "backup"] },
  ];
  h = await createHarness({ env: { MODELS: JSON.stringify(catalog), DAILY_CREDITS: "10", MODEL_TIMEOUT_MS: "1000" } });
  base = await h.listen();
});
afterAll(async () => {
  await h.close();
  await primary.close();
  await backup.close();
});
beforeEach(() => {
  primary.mode = "ok";
  backup.mode = "ok";
  primary.reply = (req) => `primary: ${req.body.messages.at(-1)?.content}`;
  backup.reply = (req) => `backup: ${req.body.messages.at(-1)?.content}`;
});

const send = (token: string, body: Record<string, unknown>) => h.request("/chat/send", { method: "POST", token, json: body });

async function userIdOf(token: string): Promise<string> {
  const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { iss: string; sub: string };
  return userIdFor(payload.iss, payload.sub);
}

/** Credits used today, the credits of the usage records and the stored replies: they must agree. */
async function ledger(token: string) {
  const userId = await userIdOf(token);
  const credits = ((await (await h.request("/credits", { token })).json()) as { used: number }).used;
  const [usage] = await h.db.select({ credits: sum(usageEvents.credits) }).from(usageEvents).where(eq(usageEvents.userId, userId));
  const [holds] = await h.db.select({ n: count() }).from(creditHolds).where(eq(creditHolds.userId, userId));
  // In the order they were written: without an ORDER BY, the order is whichever index SQLite reads.
  const replies = await h.db.select({ model: messages.model }).from(messages).where(eq(messages.userId, userId)).orderBy(asc(messages.createdAt), asc(messages.id));
  return { credits, usage: Number(usage?.credits ?? 0), holds: holds!.n, replies: replies.filter((r) => r.model !== null).map((r) => r.model) };
}

describe("fallbacks", () => {
  it.each([
    ["answers 5xx", "fail"],
    ["answers 429", "rate-limited"],
    ["does not answer in time", "slow"],
  ] as const)("answers with the fallback when the model's provider %s, charged once at the fallback's price", async (_label, mode) => {
    const token = await h.signIn(`fallback-${mode}`);
    primary.mode = mode;
    const res = await send(token, { message: "hello" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-model")).toBe("backup");
    expect(res.headers.get("x-credits-remaining")).toBe("9");
    const reply = (await res.json()) as { response: string; model: string; credits: { used: number; remaining: number } };
    expect(reply).toMatchObject({ response: "backup: hello", model: "backup", credits: { used: 1, remaining: 9 } });
    // flaky holds 2 (its price), backup costs 1: the difference went back in the batch that stored it.
    expect(await ledger(token)).toEqual({ credits: 1, usage: 1, holds: 0, replies: ["backup"] });
    const stored = (await (await h.request("/usage/messages", { token })).json()) as { items: Array<{ model: string; credits: number }> };
    expect(stored.items).toEqual([expect.objectContaining({ model: "backup", credits: 1 })]);
  });

  it("answers with the fallback when the model's server is down (connection refused), streamed, naming it in the header and the done event", async () => {
    const token = await h.signIn("fallback-down");
    const res = await send(token, { message: "anyone?", model: "down", stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-model")).toBe("backup");
    expect(res.headers.get("x-credits-remaining")).toBe("9");
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === "message").map((e) => JSON.parse(e.data).delta).join("")).toBe("backup: anyone?");
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ model: "backup", credits: { used: 1 } });
    const contextId = JSON.parse(events.at(-1)!.data).contextId as string;
    const context = (await (await h.request(`/contexts/${contextId}`, { token })).json()) as { messages: Array<{ role: string; model?: string }> };
    expect(context.messages.at(-1)).toMatchObject({ role: "assistant", model: "backup" });
  });

  it("answers with the model itself when it works, at its own price", async () => {
    const token = await h.signIn("fallback-unneeded");
    const res = await send(token, { message: "hi" });
    expect(res.headers.get("x-model")).toBe("flaky");
    expect(await res.json()).toMatchObject({ model: "flaky", credits: { used: 2 } });
    expect(await ledger(token)).toEqual({ credits: 2, usage: 2, holds: 0, replies: ["flaky"] });
  });

  it("does not fall back once a token has been streamed: the error event, nothing charged", async () => {
    const token = await h.signIn("fallback-too-late");
    primary.reply = () => "one two three four";
    primary.mode = "fail-mid-stream";
    const backupCalls = backup.requests.length;
    const events = parseSse(await (await send(token, { message: "hi", stream: true })).text());
    expect(events.at(-1)!.event).toBe("error");
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ error: 502 });
    expect(backup.requests.length).toBe(backupCalls);
    expect(await ledger(token)).toEqual({ credits: 0, usage: 0, holds: 0, replies: [] });
  });

  it("fails as today when the fallbacks fail too, refunding the whole hold", async () => {
    const token = await h.signIn("fallback-all-fail");
    primary.mode = "fail";
    backup.mode = "rate-limited";
    const res = await send(token, { message: "hi" });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { message: string }).message).toBe("model flaky failed to answer; nothing was charged, try again");
    expect(await ledger(token)).toEqual({ credits: 0, usage: 0, holds: 0, replies: [] });
  });

  it("holds the highest price of the chain, charges the fallback's when it answers, and refuses when the hold does not fit", async () => {
    const token = await h.signIn("fallback-pricey");
    primary.mode = "fail";
    // cheap costs 1, its fallback 3: the hold is 3, and the fallback's 3 is charged.
    expect(await (await send(token, { message: "a", model: "cheap" })).json()).toMatchObject({ model: "pricey-backup", credits: { used: 3 } });
    primary.mode = "ok";
    expect(await (await send(token, { message: "b", model: "cheap" })).json()).toMatchObject({ model: "cheap", credits: { used: 4 } });
    expect(await ledger(token)).toEqual({ credits: 4, usage: 4, holds: 0, replies: ["pricey-backup", "cheap"] });
    for (let i = 0; i < 4; i++) expect((await send(token, { message: "c", model: "backup" })).status).toBe(200);
    // 8 used, 2 remain: cheap costs 1 but holds 3.
    const refused = await send(token, { message: "d", model: "cheap" });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { message: string }).message).toMatch(/model cheap costs 1 credits \(3 are held in case a fallback answers\) and 2 remain today/);
    expect(await ledger(token)).toEqual({ credits: 8, usage: 8, holds: 0, replies: ["pricey-backup", "cheap", "backup", "backup", "backup", "backup"] });
  });

  it("falls back on /v1 too, naming the answering model as OpenAI's `model`, and skips fallbacks that lack what the request needs", async () => {
    const token = await h.signIn("fallback-v1");
    const key = ((await (await h.request("/keys", { method: "POST", token, json: {} })).json()) as { key: string }).key;
    const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    primary.mode = "fail";
    const whole = await client.chat.completions.create({ model: "flaky", messages: [{ role: "user", content: "v1" }] });
    expect(whole.model).toBe("backup");
    const stream = await client.chat.completions.create({ model: "flaky", messages: [{ role: "user", content: "v1" }], stream: true });
    const models = new Set<string>();
    for await (const chunk of stream) models.add(chunk.model);
    expect([...models]).toEqual(["backup"]);

    // agent's first fallback takes no tools: with tools, the second answers.
    const noToolsCalls = backup.requests.filter((r) => r.body.model === "no-tools-backup").length;
    const withTools = await client.chat.completions.create({
      model: "agent",
      messages: [{ role: "user", content: "tools" }],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
    });
    expect(withTools.model).toBe("backup");
    expect(backup.requests.filter((r) => r.body.model === "no-tools-backup").length).toBe(noToolsCalls);
    expect(await ledger(token)).toMatchObject({ credits: 3, usage: 3, holds: 0 });
  });

  it("lists each model's fallbacks in GET /models", async () => {
    const list = (await (await h.request("/models")).json()) as Array<{ id: string; fallbacks: string[]; default: boolean }>;
    expect(list.find((m) => m.id === "flaky")).toMatchObject({ fallbacks: ["backup"], default: true });
    expect(list.find((m) => m.id === "backup")!.fallbacks).toEqual([]);
  });
});

describe("measured speed", () => {
  it("shows each model's median time to first token and output speed over its recent exchanges, and says when it has none", async () => {
    const own = await createHarness({
      env: { MODELS: JSON.stringify([{ id: "measured", protocol: "openai", baseUrl: backup.baseUrl }, { id: "idle", protocol: "openai", baseUrl: backup.baseUrl, speed: "slow" }]) },
    });
    try {
      type Listed = { id: string; speed: string; measured: { samples: number; timeToFirstTokenMs: number | null; tokensPerSecond: number | null } };
      const listed = async () => (await (await own.request("/models")).json()) as Listed[];
      expect((await listed()).map((m) => [m.id, m.speed, m.measured])).toEqual([
        ["measured", "unknown", { samples: 0, timeToFirstTokenMs: null, tokensPerSecond: null }],
        ["idle", "slow", { samples: 0, timeToFirstTokenMs: null, tokensPerSecond: null }],
      ]);
      const token = await own.signIn("measurer");
      backup.reply = () => "a reply of several words to measure";
      for (const stream of [true, true, false]) {
        const res = await own.request("/chat/send", { method: "POST", token, json: { message: "hi", model: "measured", stream } });
        await res.text();
      }
      const rows = await own.db.select().from(modelTimings);
      expect(rows).toHaveLength(3);
      expect(rows.map((r) => r.firstTokenMs === null)).toEqual([false, false, true]); // whole replies have no first token
      expect(rows.every((r) => r.model === "measured" && r.durationMs >= 0)).toBe(true);
      // The upstream's own counts: a stream asks for them (stream_options.include_usage; the
      // loopback upstream counts one token a word, 7), a whole reply carries them (1).
      expect(rows.map((r) => r.outputTokens)).toEqual([7, 7, 1]);

      own.clock.advance(11_000); // past the list's cache
      const [measured, idle] = await listed();
      expect(measured!.measured.samples).toBe(3);
      expect(measured!.measured.timeToFirstTokenMs).toEqual(expect.any(Number));
      expect(measured!.measured.tokensPerSecond).toBeGreaterThan(0);
      expect(["fast", "medium", "slow"]).toContain(measured!.speed);
      expect(idle!.measured.samples).toBe(0);
    } finally {
      await own.close();
    }
  });
});
