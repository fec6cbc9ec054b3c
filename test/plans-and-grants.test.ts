import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../src/platform/config";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// Plans (PLANS) and granted credits on Node: a plan's daily credits and models decide the
// debit; granted credits are spent once the day's allowance does not cover a message, and
// never overspent by concurrent messages.

const PLANS = JSON.stringify([
  { id: "free", name: "Free", dailyCredits: 0, models: ["svc-70b"], default: true },
  { id: "pro", name: "Pro", dailyCredits: 3, models: "*" },
  { id: "elsewhere", name: "Elsewhere", dailyCredits: 10, models: ["gpt-4o"] },
]);

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: "30000", TITLES: "off", PLANS, ADMINS: "boss@example.com", RATE_LIMIT_PER_MINUTE: "0" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  h.clock.set("2026-11-22T12:00:00.000Z");
});

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const boss = () => h.signIn("boss", { email: "boss@example.com", email_verified: true });
const send = (token: string, body: Record<string, unknown> = { message: "hi" }) => h.request("/chat/send", { method: "POST", token, json: body });
const idOf = async (token: string) => (await json<{ id: string }>(h.request("/me", { token }))).id;

async function grant(userId: string, amount: number) {
  const res = await h.request(`/admin/users/${userId}/credits`, { method: "POST", token: await boss(), json: { amount, note: "test" } });
  expect(res.status).toBe(204);
}

describe("PLANS", () => {
  it("stops the start on a bad plan, naming the entry and the field", () => {
    const parse = (plans: unknown) => () => parseConfig({ AUTH_HS256_SECRET: "x".repeat(32), AUTH_AUDIENCE: "a", PLANS: JSON.stringify(plans) });
    expect(parse([{ id: "a", name: "A", dailyCredits: -1, models: "*", default: true }])).toThrow(/PLANS\[0\] \(a\)\.dailyCredits: must be 0 or more/);
    expect(parse([{ id: "a", name: "A", dailyCredits: 1, models: ["nope"], default: true }])).toThrow(/PLANS\[0\] \(a\)\.models: no model 'nope' in the catalog/);
    expect(parse([{ id: "a", name: "A", dailyCredits: 1, models: "*" }])).toThrow(/exactly one plan must have "default": true \(0 have\)/);
    expect(parse([{ id: "a", name: "A", dailyCredits: 1, models: "*", default: true, color: "red" }])).toThrow(/PLANS\[0\] \(a\): unknown field/);
    expect(() => parseConfig({ AUTH_HS256_SECRET: "x".repeat(32), AUTH_AUDIENCE: "a", PLANS: "[", PLANS_FILE: "x" })).toThrow(/set PLANS or PLANS_FILE, not both/);
  });

  it("lists PLANS in their order for admins (GET /admin/plans), the default marked", async () => {
    const plans = await json<{ items: Array<{ id: string; models: unknown; default: boolean; maxApiKeys: number | null }> }>(h.request("/admin/plans", { token: await boss() }));
    expect(plans.items.map((p) => [p.id, p.default])).toEqual([
      ["free", true],
      ["pro", false],
      ["elsewhere", false],
    ]);
    expect(plans.items[0]).toMatchObject({ name: "Free", dailyCredits: 0, models: ["svc-70b"], requestsPerMinute: null, maxApiKeys: null });
    await expectError(await h.request("/admin/plans", { token: await h.signIn("plan-peeker") }), 403, undefined, "admin_only");
  });

  it("answers 403 model_not_in_plan for a model outside the plan, and GET /models marks what the plan includes", async () => {
    const token = await h.signIn("planner");
    const id = await idOf(token);
    expect((await h.request(`/admin/users/${id}/plan`, { method: "PUT", token: await boss(), json: { plan: "elsewhere" } })).status).toBe(204);
    await expectError(await send(token, { message: "hi", model: "svc-70b" }), 403, /your plan \(Elsewhere\) does not include model svc-70b; it includes gpt-4o/, "model_not_in_plan");
    const models = await json<Array<{ id: string; inPlan: boolean }>>(h.request("/models", { token }));
    expect(models.find((m) => m.id === "svc-70b")!.inPlan).toBe(false);
    expect(models.find((m) => m.id === "gpt-4o")!.inPlan).toBe(true);
    // Without credentials: the default plan.
    const anyone = await json<Array<{ id: string; inPlan: boolean }>>(h.request("/models"));
    expect(anyone.find((m) => m.id === "svc-70b")!.inPlan).toBe(true);
    await expectError(await h.request(`/admin/users/${id}/plan`, { method: "PUT", token: await boss(), json: { plan: "gold" } }), 400, /no plan 'gold'; the plans are free, pro, elsewhere/, "plan_not_found");
  });

  it("gives the plan's daily credits, and GET /credits names the plan", async () => {
    const token = await h.signIn("pro-user");
    const id = await idOf(token);
    await expectError(await send(token), 402, /all 0 of today's credits are used and no granted credits are left/, "credits_used_up");
    await h.request(`/admin/users/${id}/plan`, { method: "PUT", token: await boss(), json: { plan: "pro" } });
    for (let i = 0; i < 3; i++) expect((await send(token)).status).toBe(200);
    expect((await send(token)).status).toBe(402);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ allowance: 3, used: 3, remaining: 0, granted: 0, plan: { id: "pro", name: "Pro" } });
  });
});

describe("granted credits", () => {
  it("are spent after the day's allowance, refunded to the grant when the model fails, and shown by GET /credits", async () => {
    const token = await h.signIn("granted");
    const id = await idOf(token);
    await h.request(`/admin/users/${id}/plan`, { method: "PUT", token: await boss(), json: { plan: "pro" } });
    await grant(id, 2);
    for (let i = 0; i < 3; i++) expect((await send(token)).status).toBe(200);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 3, remaining: 0, granted: 2 });
    const fromGrant = await send(token);
    expect(fromGrant.status).toBe(200);
    expect((await json<{ credits: unknown }>(fromGrant)).credits).toMatchObject({ allowance: 3, used: 3, remaining: 0 });
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 3, granted: 1 });
    up.mode = "fail";
    expect((await send(token)).status).toBe(502);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 3, granted: 1 });
    up.mode = "ok";
    expect((await send(token)).status).toBe(200);
    const refused = await expectError(await send(token), 402, /no granted credits are left; the day's credits return at 00:00 UTC/, "credits_used_up");
    expect(refused.message).toMatch(/all 3 of today's credits are used/);
    // The new day's allowance comes first again; the grant stays spent.
    h.clock.set("2026-11-23T00:00:01.000Z");
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 0, remaining: 3, granted: 0 });
    const audit = await json<{ items: Array<{ action: string; targetId: string; details: unknown }> }>(h.request("/admin/audit?limit=50", { token: await boss() }));
    expect(audit.items.find((e) => e.action === "user.grant" && e.targetId === id)!.details).toEqual({ amount: 2, note: "test" });
  });

  it("lets exactly 500 of 600 concurrent messages through on a balance of 500", async () => {
    const token = await h.signIn("grant-racer");
    await grant(await idOf(token), 500);
    // Stateless completions: the debit and the store, without contexts to write.
    const body = JSON.stringify({ model: "svc-70b", messages: [{ role: "user", content: "race" }] });
    const init = { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body };
    const statuses = (await Promise.all(Array.from({ length: 600 }, () => h.app.request("/v1/chat/completions", init)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(500);
    expect(statuses.filter((s) => s === 402)).toHaveLength(100);
    expect(await json(h.request("/credits", { token }))).toMatchObject({ used: 0, granted: 0 });
  }, 60_000);
});
