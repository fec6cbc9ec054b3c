import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, openDatabaseFile, type Harness } from "./support/harness";

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: "500", DAILY_CREDITS: "5" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  h.clock.set("2026-11-22T12:00:00.000Z");
});

const send = (token: string, body: Record<string, unknown> = { message: "hi" }) =>
  h.request("/chat/send", { method: "POST", token, json: body });

async function json<T>(res: Response | Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}

interface CreditsBody {
  allowance: number;
  used: number;
  remaining: number;
  resetAt: string;
  day: string;
}

describe("the daily allowance", () => {
  it("lets exactly DAILY_CREDITS of many concurrent sends through, across two app nodes on one database", async () => {
    const token = await h.signIn("concurrent");
    // A second node: its own app and database connection, sharing the database.
    const second = await openDatabaseFile(h.dbFile);
    const node2 = createApp(() => ({ ...h.deps, db: second.db }));
    try {
      const requests = Array.from({ length: 40 }, (_, i) => {
        const init = { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ message: `m${i}` }) };
        return i % 2 === 0 ? h.app.request("/chat/send", init) : Promise.resolve(node2.request("/chat/send", init));
      });
      const statuses = (await Promise.all(requests)).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 402)).toHaveLength(35);
      expect(await json<CreditsBody>(h.request("/credits", { token }))).toMatchObject({ used: 5, remaining: 0 });
    } finally {
      second.client.close();
    }
  });

  it("answers 402 saying the credits are insufficient and return at 00:00 UTC, with Retry-After", async () => {
    const token = await h.signIn("exhausted");
    for (let i = 0; i < 5; i++) expect((await send(token)).status).toBe(200);
    h.clock.set("2026-11-22T21:30:00.000Z");
    const res = await send(token);
    expect(res.status).toBe(402);
    const body = await json<{ error: number; message: string }>(res);
    expect(body.error).toBe(402);
    expect(body.message).toMatch(/^insufficient credits: all 5 of today's credits are used and no granted credits are left; the day's credits return at 00:00 UTC \(2026-11-23T00:00:00\.000Z, in 2 h 30 min\)$/);
    expect(res.headers.get("retry-after")).toBe(String(2.5 * 3600));
    expect(res.headers.get("x-credits-remaining")).toBe("0");
    expect(res.headers.get("x-credits-reset")).toBe("2026-11-23T00:00:00.000Z");
    // A refused message calls no model and stores nothing.
    expect(await json<CreditsBody>(h.request("/credits", { token }))).toMatchObject({ used: 5 });
  });

  it("gives the new day's allowance to the first message after midnight, without the job", async () => {
    const token = await h.signIn("midnight");
    h.clock.set("2026-11-22T23:59:59.000Z");
    for (let i = 0; i < 5; i++) await send(token);
    expect((await send(token)).status).toBe(402);
    h.clock.set("2026-11-23T00:00:00.000Z");
    const res = await send(token);
    expect(res.status).toBe(200);
    const reply = await json<{ credits: Omit<CreditsBody, "day"> }>(res);
    expect(reply.credits).toEqual({ allowance: 5, used: 1, remaining: 4, resetAt: "2026-11-24T00:00:00.000Z" });
    expect(await json(h.request("/usage?days=2", { token }))).toEqual({
      days: [
        { day: "2026-11-23", used: 1 },
        { day: "2026-11-22", used: 5 },
      ],
    });
  });

  it("refunds to the day it charged, even when the model fails after midnight", async () => {
    const token = await h.signIn("refund-day");
    h.clock.set("2026-11-22T23:59:59.900Z");
    await send(token);
    up.mode = "slow";
    // Charged before midnight: the model has the message (and never answers).
    const atModel = new Promise<void>((resolve) => (up.onRequest = () => resolve()));
    const pending = send(token);
    await atModel;
    up.onRequest = undefined;
    h.clock.set("2026-11-23T00:00:00.100Z");
    expect((await pending).status).toBe(504);
    expect(await json(h.request("/usage?days=2", { token }))).toEqual({
      days: [
        { day: "2026-11-23", used: 0 },
        { day: "2026-11-22", used: 1 },
      ],
    });
  });
});

describe("GET /credits", () => {
  it("shows a new user the whole allowance", async () => {
    const token = await h.signIn("fresh");
    expect(await json(h.request("/credits", { token }))).toEqual({
      allowance: 5,
      used: 0,
      remaining: 5,
      resetAt: "2026-11-23T00:00:00.000Z",
      day: "2026-11-22",
      granted: 0,
      plan: { id: "default", name: "Default" },
    });
  });

  it("answers 401 without credentials", async () => {
    expect((await h.request("/credits")).status).toBe(401);
  });
});

describe("GET /usage", () => {
  it("lists every day of the range newest first, with zeros, defaulting to 30 days", async () => {
    const token = await h.signIn("history");
    h.clock.set("2026-11-19T08:00:00.000Z");
    await send(token);
    await send(token);
    h.clock.set("2026-11-21T08:00:00.000Z");
    await send(token);
    h.clock.set("2026-11-22T08:00:00.000Z");
    const week = await json<{ days: Array<{ day: string; used: number }> }>(h.request("/usage?days=5", { token }));
    expect(week.days).toEqual([
      { day: "2026-11-22", used: 0 },
      { day: "2026-11-21", used: 1 },
      { day: "2026-11-20", used: 0 },
      { day: "2026-11-19", used: 2 },
      { day: "2026-11-18", used: 0 },
    ]);
    const month = await json<{ days: Array<{ day: string }> }>(h.request("/usage", { token }));
    expect(month.days).toHaveLength(30);
    expect(month.days.at(-1)!.day).toBe("2026-10-24");
  });

  it.each(["0", "91", "abc", "1.5"])("answers 400 for days=%s", async (days) => {
    const token = await h.signIn("history-400");
    const res = await h.request(`/usage?days=${days}`, { token });
    expect(res.status).toBe(400);
    expect((await json<{ message: string }>(res)).message).toMatch(/days/);
  });
});

describe("GET /usage/messages", () => {
  it("pages through charged messages newest first with nextCursor", async () => {
    const token = await h.signIn("per-message");
    const contextIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      h.clock.set(new Date(Date.UTC(2026, 10, 22, 9, i)));
      contextIds.push((await json<{ contextId: string }>(send(token))).contextId);
    }
    const seen: Array<{ at: string; model: string; contextId: string | null; credits: number }> = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { items: typeof seen; nextCursor: string | null } = await json(
        h.request(`/usage/messages?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { token }),
      );
      seen.push(...page.items);
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.map((s) => s.contextId)).toEqual([...contextIds].reverse());
    expect(seen[0]).toEqual({ at: "2026-11-22T09:04:00.000Z", model: "svc-70b", contextId: contextIds[4], contextName: expect.any(String), messageId: expect.stringMatching(/^msg_/), credits: 1 });
    // A deleted context's charges stay, without its name.
    expect((await h.request(`/contexts/${contextIds[4]}`, { method: "DELETE", token })).status).toBe(204);
    const after: { items: typeof seen } = await json(h.request("/usage/messages?limit=1", { token }));
    expect(after.items[0]).toMatchObject({ contextId: contextIds[4], contextName: null });
  });

  it("answers 400 for a cursor it did not issue", async () => {
    const token = await h.signIn("per-message-400");
    const res = await h.request("/usage/messages?cursor=%%%", { token });
    expect(res.status).toBe(400);
    expect((await json<{ message: string }>(res)).message).toMatch(/cursor/);
  });
});
