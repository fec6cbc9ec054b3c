import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openExchange } from "../../src/features/chat/opening";
import { parseConfig } from "../../src/platform/config";
import { dbFromD1 } from "../../src/platform/db";
import { createRuntime } from "../../src/platform/deps";
import { call, signIn } from "./support";

// The operator's console in workerd over D1: admins, suspension and its audit record, the
// people list, plans and granted credits, with the grant race run on D1.

const boss = () => signIn("worker-boss", { email: "boss@worker.test", email_verified: true });
const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const post = (path: string, headers: Record<string, string>, body?: unknown) =>
  call(path, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
const idOf = async (headers: Record<string, string>) => (await json<{ id: string }>(call("/me", { headers }))).id;

describe("the operator's console in workerd", () => {
  it("is for admins: role on GET /me, 403 admin_only to others and to API keys", async () => {
    const admin = await boss();
    expect((await json<{ role: string }>(call("/me", { headers: admin }))).role).toBe("admin");
    const user = await signIn("worker-plain");
    expect((await json<{ role: string }>(call("/me", { headers: user }))).role).toBe("user");
    const refused = await call("/admin/users", { headers: user });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: "admin_only" });
    const { key } = await json<{ key: string }>(post("/keys", admin, {}));
    expect(await json(call("/admin/audit", { headers: { "X-API-Key": key } }))).toMatchObject({ code: "admin_only" });
    expect((await call("/admin/users?limit=5", { headers: admin })).status).toBe(200);
  });

  it("suspends an account: its bearer tokens and API keys answer 403 account_suspended, recorded in the audit log; and lifts it", async () => {
    const admin = await boss();
    const bad = await signIn("worker-spammer");
    const id = await idOf(bad);
    const { key } = await json<{ key: string }>(post("/keys", bad, {}));
    expect((await post(`/admin/users/${id}/suspend`, admin, { reason: "spam" })).status).toBe(204);
    expect(await json(call("/credits", { headers: bad }))).toMatchObject({ error: 403, code: "account_suspended" });
    expect(await json(call("/credits", { headers: { "X-API-Key": key } }))).toMatchObject({ error: 403, code: "account_suspended" });
    const audit = await json<{ items: Array<{ action: string; targetId: string; details: unknown }> }>(call("/admin/audit?limit=1", { headers: admin }));
    expect(audit.items[0]).toMatchObject({ action: "user.suspend", targetId: id, targetName: "worker-spammer", details: { reason: "spam" } });
    const row = await env.DB.prepare("select suspended_reason as reason from users where id = ?").bind(id).first<{ reason: string }>();
    expect(row?.reason).toBe("spam");
    const person = await json<{ status: string }>(call(`/admin/users/${id}`, { headers: admin }));
    expect(person.status).toBe("suspended");
    expect((await post(`/admin/users/${id}/unsuspend`, admin)).status).toBe(204);
    expect((await call("/credits", { headers: bad })).status).toBe(200);
  });

  it("makes, lists and revokes an invite, each audited, keeping only the code's hash", async () => {
    const admin = await boss();
    const made = await post("/admin/invites", admin, { uses: 3, plan: "elsewhere" });
    expect(made.status).toBe(201);
    const invite = await json<{ id: string; code: string }>(made);
    const stored = await env.DB.prepare("select code_hash as hash from invites where id = ?").bind(invite.id).first<{ hash: string }>();
    expect(stored?.hash).toMatch(/^[0-9a-f]{64}$/);
    const list = await json<{ items: Array<{ id: string; usesLeft: number; plan: string }> }>(call("/admin/invites", { headers: admin }));
    expect(list.items.find((i) => i.id === invite.id)).toMatchObject({ usesLeft: 3, plan: "elsewhere" });
    expect((await call(`/admin/invites/${invite.id}`, { method: "DELETE", headers: admin })).status).toBe(204);
    const audit = await json<{ items: Array<{ action: string }> }>(call("/admin/audit?limit=2", { headers: admin }));
    expect(audit.items.map((e) => e.action)).toEqual(["invite.delete", "invite.create"]);
  });

  it("holds an API key to its own daily credit limit and models on D1, and refuses it once expired", async () => {
    const user = await signIn("worker-key-limits");
    const limited = await json<{ key: string; id: string }>(post("/keys", user, { dailyCreditLimit: 1, models: ["svc-70b"] }));
    const key = { "X-API-Key": limited.key };
    expect((await post("/chat/send", key, { message: "one" })).status).toBe(200);
    expect(await json(post("/chat/send", key, { message: "two" }))).toMatchObject({ error: 402, code: "api_key_credit_limit" });
    const narrow = await json<{ key: string }>(post("/keys", user, { models: ["gpt-4o"] }));
    expect(await json(post("/chat/send", { "X-API-Key": narrow.key }, { message: "three" }))).toMatchObject({ error: 403, code: "model_not_allowed_for_key" });
    const keys = await json<Array<{ id: string; creditsUsedToday: number; models: string[] }>>(call("/keys", { headers: user }));
    expect(keys.find((k) => k.id === limited.id)).toMatchObject({ creditsUsedToday: 1, models: ["svc-70b"] });
    const soon = await json<{ key: string; id: string }>(post("/keys", user, { expiresAt: new Date(Date.now() + 60_000).toISOString() }));
    await env.DB.prepare("update api_keys set expires_at = ? where id = ?").bind(Date.now() - 1, soon.id).run();
    expect(await json(call("/credits", { headers: { "X-API-Key": soon.key } }))).toMatchObject({ error: 401, code: "api_key_expired" });
  });

  it("erases an account on request (DELETE /me) and by an admin, keeping usage that points at nobody", async () => {
    const user = await signIn("worker-eraser");
    const id = await idOf(user);
    const { contextId } = await json<{ contextId: string }>(post("/chat/send", user, { message: "forget me" }));
    const wrong = await call("/me", { method: "DELETE", headers: { ...user, "Content-Type": "application/json" }, body: '{"confirm":"usr_x"}' });
    expect(await wrong.json()).toMatchObject({ error: 422, code: "confirmation_mismatch" });
    expect((await call("/me", { method: "DELETE", headers: { ...user, "Content-Type": "application/json" }, body: JSON.stringify({ confirm: id }) })).status).toBe(204);
    const left = await env.DB.prepare("select (select count(*) from contexts where id = ?1) as contexts, (select count(*) from users where id = ?2) as users, (select count(*) from usage_events where user_id = ?2) as usage").bind(contextId, id).first<Record<string, number>>();
    expect(left).toEqual({ contexts: 0, users: 0, usage: 0 });
    expect(await json(call("/contexts", { headers: user }))).toMatchObject({ items: [] });

    const admin = await boss();
    const other = await signIn("worker-erased-by-admin");
    const otherId = await idOf(other);
    expect((await call(`/admin/users/${otherId}`, { method: "DELETE", headers: admin })).status).toBe(204);
    const audit = await json<{ items: Array<{ action: string; targetId: string }> }>(call("/admin/audit?limit=1", { headers: admin }));
    // An erased account has no name left to show; the admin who erased it has.
    expect(audit.items[0]).toMatchObject({ action: "user.erase", targetId: otherId, targetName: null, actorName: "worker-boss" });
  });

  it("reports usage and the replies' ratings per model and person on D1, as JSON and CSV", async () => {
    const admin = await boss();
    const user = await signIn("worker-reported");
    const sent = await post("/chat/send", user, { message: "for the report" });
    expect(sent.status).toBe(200);
    const { contextId, messageId } = await json<{ contextId: string; messageId: string }>(sent);
    const userId = await idOf(user);
    type Report = { items: Array<{ key: string; messages: number; credits: number; ratingsUp: number; ratingsDown: number }> };
    const svc = async () => (await json<Report>(call("/admin/usage?groupBy=model", { headers: admin }))).items.find((r) => r.key === "svc-70b")!;
    const before = await svc();
    expect(before.messages).toBeGreaterThan(0);
    const rating = await call(`/contexts/${contextId}/messages/${messageId}/rating`, { method: "PUT", headers: { ...user, "Content-Type": "application/json" }, body: '{"rating":"down"}' });
    expect(rating.status).toBe(200);
    expect(await svc()).toMatchObject({ ratingsUp: before.ratingsUp, ratingsDown: before.ratingsDown + 1 });
    const byUser = await json<Report>(call("/admin/usage?groupBy=user", { headers: admin }));
    expect(byUser.items.find((r) => r.key === userId)).toMatchObject({ messages: 1, ratingsUp: 0, ratingsDown: 1 });
    const byDay = await json<{ items: Array<{ key: string }> }>(call("/admin/usage", { headers: admin }));
    expect(byDay.items.at(-1)!.key).toBe(new Date().toISOString().slice(0, 10));
    const csv = (await (await call("/admin/usage?groupBy=user&format=csv", { headers: admin })).text()).split("\r\n");
    expect(csv[0]).toBe("user,messages,credits,inputTokens,outputTokens,estimatedTokenRows,failed,medianTimeToFirstTokenMs,cost,ratingsUp,ratingsDown");
    expect(csv.find((line) => line.startsWith(`${userId},`))).toMatch(/^usr_\S+,1,1,.*,0,1$/);
    const named = await json<{ items: Array<{ key: string; name: string | null }> }>(call("/admin/usage?groupBy=user", { headers: admin }));
    expect(named.items.find((r) => r.key === userId)).toMatchObject({ name: "worker-reported" });
  });

  it("lists the plans of PLANS for admins (GET /admin/plans)", async () => {
    const plans = await json<{ items: Array<{ id: string; dailyCredits: number; default: boolean }> }>(call("/admin/plans", { headers: await boss() }));
    expect(plans.items.map((p) => p.id)).toEqual(["default", "grants-only", "elsewhere", "limited"]);
    expect(plans.items[0]).toMatchObject({ dailyCredits: 3, default: true });
    expect(plans.items[2]).toMatchObject({ models: ["gpt-4o"], default: false });
    expect((await call("/admin/plans", { headers: await signIn("worker-plan-peeker") })).status).toBe(403);
  });

  it("refuses a model outside the plan with 403 model_not_in_plan", async () => {
    const admin = await boss();
    const user = await signIn("worker-planner");
    const id = await idOf(user);
    expect((await call(`/admin/users/${id}/plan`, { method: "PUT", headers: { ...admin, "Content-Type": "application/json" }, body: '{"plan":"elsewhere"}' })).status).toBe(204);
    const res = await post("/chat/send", user, { message: "hi", model: "svc-70b" });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: "model_not_in_plan" });
  });

  it("lets exactly 500 of 600 concurrent messages through on a granted balance of 500, on D1", async () => {
    const admin = await boss();
    const racer = await signIn("worker-grant-racer");
    const id = await idOf(racer);
    await call(`/admin/users/${id}/plan`, { method: "PUT", headers: { ...admin, "Content-Type": "application/json" }, body: '{"plan":"grants-only"}' });
    expect((await post(`/admin/users/${id}/credits`, admin, { amount: 500 })).status).toBe(204);
    // The opening batches themselves, 600 at once on D1 (the model calls after them would
    // only slow the race down: a charge is decided by its opening batch alone).
    const runtime = await createRuntime(parseConfig(env as never));
    const deps = { ...runtime, db: dbFromD1(env.DB) };
    const principal = { via: "api-key" as const, userId: id, keyId: "race" };
    const opened = await Promise.all(Array.from({ length: 600 }, (_, i) => openExchange(deps, { principal, modelId: "svc-70b", requestId: `race-${i}` })));
    expect(opened.filter((o) => o.kind === "charged")).toHaveLength(500);
    const refused = opened.filter((o) => o.kind === "refused");
    expect(refused).toHaveLength(100);
    expect(refused[0]!.kind === "refused" && refused[0]!.error.code).toBe("credits_used_up");
    expect(await json(call("/credits", { headers: racer }))).toMatchObject({ used: 0, granted: 0, plan: { id: "grants-only" } });
  }, 60_000);
});
