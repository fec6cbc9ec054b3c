import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openExchange } from "../../src/features/chat/opening";
import { parseConfig } from "../../src/platform/config";
import { dbFromD1 } from "../../src/platform/db";
import { createRuntime } from "../../src/platform/deps";
import { call, signIn } from "./support";

// A plan's requestsPerMinute on the Worker over D1 (the plan "limited": 2 model calls a
// minute, test/worker/vitest.config.ts): counted in the opening batch, so every isolate and
// every concurrent request sees the same count.

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const post = (path: string, headers: Record<string, string>, body?: unknown) =>
  call(path, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

/** A new account an admin put on the plan "limited"; its id. */
async function limitedAccount(name: string): Promise<{ auth: Record<string, string>; id: string }> {
  const boss = await signIn("worker-boss", { email: "boss@worker.test", email_verified: true });
  const auth = await signIn(name);
  const { id } = await json<{ id: string }>(call("/me", { headers: auth }));
  const moved = await call(`/admin/users/${id}/plan`, { method: "PUT", headers: { ...boss, "Content-Type": "application/json" }, body: '{"plan":"limited"}' });
  expect(moved.status).toBe(204);
  return { auth, id };
}

const minute = () => Math.floor(Date.now() / 60_000);

describe("a plan's requestsPerMinute in workerd", () => {
  it("answers the call past the limit 429 plan_rate_limit with Retry-After, and charges nothing for it", async () => {
    // The window is the wall clock's minute: a run that crosses into the next minute proves
    // nothing, and is run again with a new account (it cannot cross twice in a row).
    for (let attempt = 0; ; attempt++) {
      const { auth } = await limitedAccount(`worker-rate-${attempt}`);
      const started = minute();
      const statuses = [];
      for (const message of ["one", "two"]) statuses.push((await post("/chat/send", auth, { message })).status);
      const refused = await post("/chat/send", auth, { message: "three" });
      if (minute() !== started && attempt < 2) continue;
      expect(statuses).toEqual([200, 200]);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get("Retry-After"))).toBeLessThanOrEqual(60);
      expect(await refused.json()).toMatchObject({ error: 429, code: "plan_rate_limit", message: expect.stringMatching(/your plan \(Limited\) allows 2 model calls a minute/) });
      expect(await json(call("/credits", { headers: auth }))).toMatchObject({ used: 2, plan: { id: "limited" } });
      return;
    }
  });

  it("lets exactly the limit through of 20 concurrent opening batches on D1, and in the next minute what the day leaves (3 credits: 1)", async () => {
    const { id } = await limitedAccount("worker-rate-race");
    // The opening batches themselves, at a fixed time (the model calls after them only slow the race).
    let now = new Date("2026-11-22T12:00:10.000Z");
    const runtime = await createRuntime(parseConfig(env as never), { now: () => now });
    const deps = { ...runtime, db: dbFromD1(env.DB) };
    const principal = { via: "api-key" as const, userId: id, keyId: "rate-race" };
    const open = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => openExchange(deps, { principal, modelId: "svc-70b", requestId: `rate-${i}` })));
    const first = await open(20);
    expect(first.filter((o) => o.kind === "charged")).toHaveLength(2);
    const refused = first.filter((o) => o.kind === "refused");
    expect(refused).toHaveLength(18);
    expect(refused.every((o) => o.kind === "refused" && o.error.code === "plan_rate_limit")).toBe(true);
    now = new Date("2026-11-22T12:01:00.000Z");
    expect((await open(5)).filter((o) => o.kind === "charged")).toHaveLength(1);
  }, 60_000);
});
