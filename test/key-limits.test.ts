import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// API keys with limits of their owner's (as OpenRouter's): credits a day, an expiry, the
// models they may call. Past a key's limit only that key is refused.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "off", OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: up.baseUrl } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => h.clock.set("2026-11-22T12:00:00.000Z"));

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const newKey = async (token: string, body: Record<string, unknown>) => {
  const res = await h.request("/keys", { method: "POST", token, json: body });
  expect(res.status, await res.clone().text()).toBe(201);
  return json<{ id: string; key: string; dailyCreditLimit: number | null; expiresAt: string | null; models: string[] | null }>(res);
};
const send = (apiKey: string, body: Record<string, unknown> = { message: "hi" }) => h.request("/chat/send", { method: "POST", apiKey, json: body });

describe("API keys with limits", () => {
  it("stops a key at its daily credit limit with 402 api_key_credit_limit, while the account's other keys and tokens go on", async () => {
    const token = await h.signIn("limited");
    const limited = await newKey(token, { name: "ci", dailyCreditLimit: 2 });
    expect(limited).toMatchObject({ dailyCreditLimit: 2, expiresAt: null, models: null });
    const free = await newKey(token, { name: "free" });
    expect((await send(limited.key)).status).toBe(200);
    expect((await send(limited.key)).status).toBe(200);
    const refused = await expectError(await send(limited.key), 402, /this API key has spent 2 of its 2 credits for today/, "api_key_credit_limit");
    expect(refused.message).toMatch(/other keys and sessions still work/);
    expect((await send(free.key)).status).toBe(200);
    expect((await h.request("/chat/send", { method: "POST", token, json: { message: "hi" } })).status).toBe(200);
    const keys = await json<Array<{ id: string; creditsUsedToday: number; dailyCreditLimit: number | null }>>(h.request("/keys", { token }));
    expect(keys.find((k) => k.id === limited.id)).toMatchObject({ creditsUsedToday: 2, dailyCreditLimit: 2 });
    expect(keys.find((k) => k.id === free.id)).toMatchObject({ creditsUsedToday: 1, dailyCreditLimit: null });
    // A new day, a new limit.
    h.clock.set("2026-11-23T00:00:01.000Z");
    expect((await send(limited.key)).status).toBe(200);
  });

  it("never lets concurrent messages with one key pass its limit", async () => {
    const token = await h.signIn("limited-race");
    const { key } = await newKey(token, { dailyCreditLimit: 5 });
    const statuses = (await Promise.all(Array.from({ length: 20 }, () => send(key)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 402)).toHaveLength(15);
  });

  it("answers 401 api_key_expired after expiresAt", async () => {
    const token = await h.signIn("expiring");
    const { key, expiresAt } = await newKey(token, { expiresAt: "2026-11-22T13:00:00Z" });
    expect(expiresAt).toBe("2026-11-22T13:00:00.000Z");
    expect((await h.request("/credits", { apiKey: key })).status).toBe(200);
    h.clock.set("2026-11-22T13:00:00.000Z");
    await expectError(await h.request("/credits", { apiKey: key }), 401, /this API key expired at 2026-11-22T13:00:00.000Z/, "api_key_expired");
    await expectError(await h.request("/keys", { method: "POST", token, json: { expiresAt: "2026-11-22T12:00:00Z" } }), 400, /expiresAt: must be in the future/);
  });

  it("answers 403 model_not_allowed_for_key for a model outside the key's list, the default model included", async () => {
    const token = await h.signIn("narrow");
    const { key, models } = await newKey(token, { models: ["gpt-4o"] });
    expect(models).toEqual(["gpt-4o"]);
    await expectError(await send(key, { message: "hi", model: "svc-70b" }), 403, /this API key may call only gpt-4o, not svc-70b/, "model_not_allowed_for_key");
    await expectError(await send(key), 403, undefined, "model_not_allowed_for_key");
    const v1 = await h.request("/v1/chat/completions", { method: "POST", apiKey: key, json: { model: "svc-70b", messages: [{ role: "user", content: "hi" }] } });
    expect(v1.status).toBe(403);
    expect((await send(key, { message: "hi", model: "gpt-4o" })).status).toBe(200);
    await expectError(await h.request("/keys", { method: "POST", token, json: { models: ["nope"] } }), 400, /models: no model 'nope'/);
  });
});
