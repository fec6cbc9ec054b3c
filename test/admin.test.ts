import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { parseAdmins } from "../src/platform/admins";
import { userIdFor } from "../src/platform/auth/identity";
import { parseConfig } from "../src/platform/config";
import { createRuntime } from "../src/platform/deps";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, openDatabaseFile, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { HARNESS_ORIGIN } from "./support/wallet";

// The operator's console on Node: who is an admin (ADMINS), and every /admin operation
// walked by an admin and refused to everyone else; suspension, its audit record, and the
// people list and page.

let up: FakeUpstream;
let h: Harness;
let bossId: string;
const WALLET = "0x71C7656EC7ab88b098defB751B7401B5f6d8976F";
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, ADMINS: `boss@example.com, ops@example.com, ${WALLET.toLowerCase()}` } });
  bossId = await userIdFor(h.idp.issuer, "user:boss");
});
afterAll(async () => {
  await h.close();
  await up.close();
});

/** The admin: ADMINS names their verified e-mail. */
const signInBoss = () => h.signIn("boss", { email: "boss@example.com", email_verified: true });

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const me = (token: string) => json<{ id: string; role: string }>(h.request("/me", { token }));

async function newKey(token: string): Promise<string> {
  const res = await h.request("/keys", { method: "POST", token, json: {} });
  expect(res.status).toBe(201);
  return (await json<{ key: string }>(res)).key;
}

async function providerSession(name: string) {
  const res = await h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn(name) } });
  expect(res.status, await res.clone().text()).toBe(200);
  const cookie = /refresh_token=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")![1]!;
  return { accessToken: (await json<{ accessToken: string }>(res)).accessToken, cookie };
}

/** Every /admin operation of the OpenAPI document, with its path's parameters filled in. */
async function adminOperations(userId: string): Promise<Array<{ method: string; path: string; body?: unknown }>> {
  const doc = await json<{ paths: Record<string, Record<string, unknown>> }>(h.request("/openapi.json"));
  const bodies: Record<string, unknown> = {
    "post /admin/users/{id}/suspend": { reason: "walk" },
    "post /admin/users/{id}/credits": { amount: 1 },
    "put /admin/users/{id}/plan": { plan: "default" },
    "post /admin/invites": { uses: 1 },
    "delete /admin/users/{id}": undefined,
  };
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith("/admin"))
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method, path, body: bodies[`${method} ${path}`] })))
    .map((op) => ({ ...op, path: op.path.replace("{id}", userId) }));
}

describe("admins", () => {
  it("gives GET /me role admin to the accounts ADMINS names: by id, verified e-mail and wallet; user to others", async () => {
    expect(await me(await signInBoss())).toEqual(expect.objectContaining({ id: bossId, role: "admin" }));
    // By account id: the same app with ADMINS naming the id.
    const byId = createApp(() => ({ ...h.deps, config: { ...h.deps.config, admins: parseAdmins(`${bossId}`).admins } }));
    const viaId = await byId.request("/me", { headers: { Authorization: `Bearer ${await h.signIn("boss")}` } });
    expect(((await viaId.json()) as { role: string }).role).toBe("admin");
    expect((await me(await h.signIn("mailer", { email: "OPS@example.com", email_verified: true }))).role).toBe("admin");
    // The same address the provider does not vouch for is no one's admin.
    expect((await me(await h.signIn("pretender", { email: "ops@example.com", email_verified: false }))).role).toBe("user");
    expect((await me(await h.signIn("wallet-holder", { wallet_address: WALLET }))).role).toBe("admin");
    expect((await me(await h.signIn("nobody"))).role).toBe("user");
  });

  it("answers every /admin operation 403 admin_only to a non-admin and to an admin's API key, and lets the admin walk them all", async () => {
    const boss = await signInBoss();
    const target = await h.signIn("walk-target");
    const targetId = (await me(target)).id;
    const operations = await adminOperations(targetId);
    expect(operations.length).toBeGreaterThanOrEqual(7);
    const user = await h.signIn("walk-user");
    const bossKey = await newKey(boss);
    for (const op of operations) {
      const init = { method: op.method.toUpperCase(), ...(op.body === undefined ? {} : { json: op.body }) };
      await expectError(await h.request(op.path, { ...init, token: user }), 403, /only the service's admins/, "admin_only");
      await expectError(await h.request(op.path, { ...init, apiKey: bossKey }), 403, /API keys never may/, "admin_only");
    }
    for (const op of operations.filter((o) => o.method !== "delete")) {
      const res = await h.request(op.path, { method: op.method.toUpperCase(), token: boss, ...(op.body === undefined ? {} : { json: op.body }) });
      expect(res.status, `${op.method} ${op.path}: ${await res.clone().text()}`).toBeLessThan(300);
    }
    await expectError(await h.request("/admin/users/usr_nobody/suspend", { method: "POST", token: boss, json: { reason: "x" } }), 404, /no account/, "user_not_found");
  });
});

describe("plans", () => {
  it("lists the plans for the console: the built-in default without PLANS", async () => {
    const plans = await json<{ items: unknown[] }>(h.request("/admin/plans", { token: await signInBoss() }));
    expect(plans.items).toEqual([{ id: "default", name: "Default", dailyCredits: 500, models: "*", requestsPerMinute: null, maxApiKeys: null, default: true }]);
  });
});

describe("suspension", () => {
  it("refuses the account's tokens, sessions, API keys and sign-ins with 403 account_suspended, records it, and lifts it", async () => {
    const boss = await signInBoss();
    const bearer = await h.signIn("spammer");
    const spammerId = (await me(bearer)).id;
    const key = await newKey(bearer);
    const session = await providerSession("spammer");
    expect((await h.request("/credits", { token: session.accessToken })).status).toBe(200);

    expect((await h.request(`/admin/users/${spammerId}/suspend`, { method: "POST", token: boss, json: { reason: "sends spam" } })).status).toBe(204);
    for (const credential of [{ token: bearer }, { token: session.accessToken }, { apiKey: key }]) {
      await expectError(await h.request("/credits", credential), 403, /suspended by the service's operator \(sends spam\)/, "account_suspended");
    }
    await expectError(await h.request("/auth/session", { method: "POST", json: { accessToken: bearer } }), 403, /suspended/, "account_suspended");
    // Its sessions ended: the refresh cookie no longer works.
    expect((await h.request("/auth/refresh", { method: "POST", headers: { Cookie: `refresh_token=${session.cookie}`, Origin: HARNESS_ORIGIN } })).status).toBe(401);

    // Another process over the same database (a restart) refuses it too.
    const other = await openDatabaseFile(h.dbFile);
    try {
      const runtime = await createRuntime(parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: h.idp.issuer, AUTH_AUDIENCE: h.idp.audience, LOG_LEVEL: "error" }));
      const restarted = createApp(() => ({ ...runtime, db: other.db }));
      await expectError(await restarted.request("/credits", { headers: { Authorization: `Bearer ${bearer}` } }), 403, undefined, "account_suspended");
    } finally {
      other.client.close();
    }

    const person = await json<{ status: string; suspendedReason: string; sessions: unknown[] }>(h.request(`/admin/users/${spammerId}`, { token: boss }));
    expect(person).toMatchObject({ status: "suspended", suspendedReason: "sends spam", sessions: [] });
    const audit = await json<{ items: Array<{ action: string; actorId: string; targetId: string; details: unknown }> }>(h.request("/admin/audit?limit=5", { token: boss }));
    // With the names the accounts have, so that the log reads who did what to whom.
    expect(audit.items[0]).toMatchObject({ action: "user.suspend", actorId: bossId, actorName: "boss", targetId: spammerId, targetName: "spammer", details: { reason: "sends spam" } });

    expect((await h.request(`/admin/users/${spammerId}/unsuspend`, { method: "POST", token: boss })).status).toBe(204);
    expect((await h.request("/credits", { token: bearer })).status).toBe(200);
    expect((await h.request("/credits", { apiKey: key })).status).toBe(200);
    expect((await h.request("/auth/session", { method: "POST", json: { accessToken: bearer } })).status).toBe(200);
    const after = await json<{ items: Array<{ action: string }> }>(h.request("/admin/audit?limit=1", { token: boss }));
    expect(after.items[0]!.action).toBe("user.unsuspend");
  });
});

describe("people", () => {
  it("lists accounts newest first with what they use, filters them by q, status and plan, and pages", async () => {
    const boss = await signInBoss();
    const a = await h.signIn("people-ada", { email: "ada@lovelace.example" });
    const adaId = (await me(a)).id;
    expect((await h.request("/chat/send", { method: "POST", token: a, json: { message: "hi" } })).status).toBe(200);
    h.clock.advance(1000); // bob signs up a second after ada: "newest first" has an order to show
    const b = await h.signIn("people-bob");
    const bobId = (await me(b)).id;
    await h.request(`/admin/users/${bobId}/suspend`, { method: "POST", token: boss, json: { reason: "test" } });

    type Page = { items: Array<{ id: string; status: string; creditsUsedToday: number; messages30Days: number; plan: string; signInMethods: string[]; lastSeenAt: string | null }>; nextCursor: string | null };
    const byName = await json<Page>(h.request("/admin/users?q=LOVELACE", { token: boss }));
    expect(byName.items.map((p) => p.id)).toEqual([adaId]);
    expect(byName.items[0]).toMatchObject({ status: "active", creditsUsedToday: 1, messages30Days: 1, plan: "default", signInMethods: ["provider"] });
    expect(byName.items[0]!.lastSeenAt).not.toBeNull();
    expect((await json<Page>(h.request(`/admin/users?q=${adaId}`, { token: boss }))).items.map((p) => p.id)).toEqual([adaId]);
    const suspended = await json<Page>(h.request("/admin/users?status=suspended&q=people-", { token: boss }));
    expect(suspended.items.map((p) => p.id)).toEqual([bobId]);
    expect((await json<Page>(h.request("/admin/users?plan=default&q=people-", { token: boss }))).items).toHaveLength(2);

    const first = await json<Page>(h.request("/admin/users?limit=1&q=people-", { token: boss }));
    expect(first.items.map((p) => p.id)).toEqual([bobId]);
    const second = await json<Page>(h.request(`/admin/users?limit=1&q=people-&cursor=${first.nextCursor}`, { token: boss }));
    expect(second.items.map((p) => p.id)).toEqual([adaId]);
    expect(second.nextCursor).toBeNull();
  });

  it("shows a person's page: sessions, API keys and credits per day for 30 days", async () => {
    const boss = await signInBoss();
    const token = await h.signIn("page-person");
    const id = (await me(token)).id;
    await newKey(token);
    await providerSession("page-person");
    await h.request("/chat/send", { method: "POST", token, json: { message: "hi" } });
    const person = await json<{ sessions: Array<{ method: string }>; apiKeys: Array<{ prefix: string; dailyCreditLimit: number | null }>; creditsPerDay: Array<{ day: string; used: number }> }>(
      h.request(`/admin/users/${id}`, { token: boss }),
    );
    expect(person.sessions).toEqual([expect.objectContaining({ method: "provider" })]);
    expect(person.apiKeys).toEqual([expect.objectContaining({ prefix: expect.stringMatching(/^sk_/), dailyCreditLimit: null })]);
    expect(person.creditsPerDay).toHaveLength(30);
    expect(person.creditsPerDay[0]).toEqual({ day: "2026-11-22", used: 1 });
    await expectError(await h.request("/admin/users/usr_missing", { token: boss }), 404, undefined, "user_not_found");
  });
});
