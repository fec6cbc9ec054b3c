import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { chatMinutes } from "../schema/index";
import { createApp } from "../src/app";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { expectError } from "./support/expect-error";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, openDatabaseFile, type Harness } from "./support/harness";

// A plan's requestsPerMinute on Node: the model calls an account may ask for in a UTC minute,
// counted in the database by the batch that debits, so it holds for every surface that calls
// a model, for concurrent calls, and across processes sharing the database.

const PLANS = JSON.stringify([
  { id: "default", name: "Default", dailyCredits: 100, models: "*", default: true },
  { id: "limited", name: "Limited", dailyCredits: 100, models: "*", requestsPerMinute: 3 },
]);

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  // RATE_LIMIT_PER_MINUTE off: only the plan's limit counts here.
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "off", PLANS, ADMINS: "boss@example.com", RATE_LIMIT_PER_MINUTE: "0" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  h.clock.set("2026-11-22T12:00:15.000Z");
});

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const send = (token: string, body: Record<string, unknown> = { message: "hi" }) => h.request("/chat/send", { method: "POST", token, json: body });
const completion = (token: string) => h.request("/v1/chat/completions", { method: "POST", token, json: { model: "svc-70b", messages: [{ role: "user", content: "hi" }] } });

/** A new account on the plan `plan`, as an admin puts it there. */
async function onPlan(name: string, plan: string): Promise<string> {
  const token = await h.signIn(name);
  const { id } = await json<{ id: string }>(h.request("/me", { token }));
  const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
  expect((await h.request(`/admin/users/${id}/plan`, { method: "PUT", token: boss, json: { plan } })).status).toBe(204);
  return token;
}

describe("a plan's requestsPerMinute", () => {
  it("counts messages, regenerations, edits and /v1 together: past the limit 429 plan_rate_limit, uncharged, until the next minute", async () => {
    const token = await onPlan("rate-mixed", "limited");
    const first = await json<{ contextId: string; messageId: string }>(send(token, { message: "q1" }));
    expect((await h.request(`/contexts/${first.contextId}/messages/${first.messageId}/regenerate`, { method: "POST", token, json: {} })).status).toBe(200);
    expect((await completion(token)).status).toBe(200);

    const refused = await send(token, { message: "q1, edited", contextId: first.contextId, parentId: null });
    const body = await expectError(refused, 429, /your plan \(Limited\) allows 3 model calls a minute; retry in 45 s \(nothing was charged\)/, "plan_rate_limit");
    expect(body.message).not.toMatch(/RATE_LIMIT/);
    expect(refused.headers.get("retry-after")).toBe("45");
    // The OpenAI-compatible surface says so in OpenAI's shape, which its SDKs retry after Retry-After.
    const v1 = await completion(token);
    expect(v1.status).toBe(429);
    expect(v1.headers.get("retry-after")).toBe("45");
    expect(await v1.json()).toEqual({ error: { message: expect.stringMatching(/allows 3 model calls a minute/), type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } });
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 3 });

    // The next UTC minute is a new count.
    h.clock.set("2026-11-22T12:01:00.000Z");
    expect((await send(token, { message: "q1, edited", contextId: first.contextId, parentId: null })).status).toBe(200);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 4 });
  });

  it("lets exactly the limit through of many concurrent calls, and charges only those", async () => {
    const token = await onPlan("rate-race", "limited");
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => send(token, { message: `m${i}` })));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, ...Array(9).fill(429)]);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 3 });
  });

  it("holds across processes: a second server over the same database counts into the same minute", async () => {
    const token = await onPlan("rate-two-servers", "limited");
    const second = await openDatabaseFile(h.dbFile);
    const other = createApp(() => ({ ...h.deps, db: second.db }));
    try {
      const viaOther = () =>
        Promise.resolve(other.request("/chat/send", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: '{"message":"hi"}' }));
      expect((await send(token)).status).toBe(200);
      expect((await viaOther()).status).toBe(200);
      expect((await send(token)).status).toBe(200);
      await expectError(await viaOther(), 429, /allows 3 model calls a minute/, "plan_rate_limit");
      await expectError(await send(token), 429, /allows 3 model calls a minute/, "plan_rate_limit");
    } finally {
      second.client.close();
    }
  });

  it("counts each account apart, and leaves a plan without a limit to RATE_LIMIT_PER_MINUTE alone", async () => {
    const [ann, bob] = await Promise.all([onPlan("rate-ann", "limited"), onPlan("rate-bob", "limited")]);
    for (let i = 0; i < 3; i++) {
      expect((await send(ann)).status).toBe(200);
      expect((await send(bob)).status).toBe(200);
    }
    expect((await send(ann)).status).toBe(429);
    const free = await h.signIn("rate-default");
    for (let i = 0; i < 6; i++) expect((await send(free)).status).toBe(200);
  });

  it("keeps one row per account, and the daily job removes the minutes that are over", async () => {
    const token = await onPlan("rate-rows", "limited");
    const { id } = await json<{ id: string }>(h.request("/me", { token }));
    const rows = () => h.db.select({ minute: chatMinutes.minute, count: chatMinutes.count }).from(chatMinutes).where(eq(chatMinutes.userId, id));
    expect((await send(token)).status).toBe(200);
    h.clock.set("2026-11-22T12:05:30.000Z");
    expect((await send(token)).status).toBe(200);
    expect((await send(token)).status).toBe(200);
    expect(await rows()).toEqual([{ minute: Date.parse("2026-11-22T12:05:00.000Z") / 60_000, count: 2 }]);
    const result = await runDailyRollover(h.deps, { scheduledTime: new Date("2026-11-23T00:00:00.000Z") });
    expect(result.prunedChatMinutes).toBeGreaterThanOrEqual(1);
    expect(await rows()).toEqual([]);
  });
});

describe("without a plan that limits calls", () => {
  it("counts nothing: no row is written for a message", async () => {
    const plain = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "off" } });
    try {
      const token = await plain.signIn("uncounted");
      expect((await plain.request("/chat/send", { method: "POST", token, json: { message: "hi" } })).status).toBe(200);
      expect(await plain.db.select().from(chatMinutes)).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
