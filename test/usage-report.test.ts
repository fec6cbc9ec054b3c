import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// GET /admin/usage: messages, credits, the provider's token counts (streams ask for them),
// failed exchanges, time to first token and the operator's cost, per day, model and person.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: true });
  const MODELS = JSON.stringify([
    { id: "house", protocol: "openai", baseUrl: up.baseUrl, upstream: "house-8b", default: true, inputPricePerMillion: 1000, outputPricePerMillion: 2000 },
  ]);
  h = await createHarness({ env: { MODELS, TITLES: "off", ADMINS: "boss@example.com", MODEL_TIMEOUT_MS: "2000" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const boss = () => h.signIn("boss", { email: "boss@example.com", email_verified: true });

describe("usage and cost", () => {
  it("asks OpenAI-compatible streams for the provider's token counts and keeps them, not an estimate", async () => {
    const token = await h.signIn("streamer");
    const res = await h.request("/chat/send", { method: "POST", token, json: { message: "count my tokens", stream: true } });
    await res.text();
    expect(up.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const [row] = await h.db.all<{ input_tokens: number; output_tokens: number; tokens_estimated: number; first_token_ms: number | null }>(
      sql`select input_tokens, output_tokens, tokens_estimated, first_token_ms from usage_events order by at desc, id desc limit 1`,
    );
    // The fake upstream counts 7 tokens in and one per piece of "echo: count my tokens" (4) out.
    expect(row).toMatchObject({ input_tokens: 7, output_tokens: 4, tokens_estimated: 0 });
    expect(row!.first_token_ms).not.toBeNull();
  });

  it("reports per model, day and person, with failures, medians and cost, as JSON and CSV", async () => {
    const admin = await boss();
    const token = await h.signIn("reported");
    const { id, name } = await json<{ id: string; name: string }>(h.request("/me", { token }));
    expect((await h.request("/chat/send", { method: "POST", token, json: { message: "one" } })).status).toBe(200);
    up.mode = "fail";
    expect((await h.request("/chat/send", { method: "POST", token, json: { message: "two" } })).status).toBe(502);
    up.mode = "ok";

    type Report = { from: string; to: string; items: Array<{ key: string; messages: number; credits: number; inputTokens: number; outputTokens: number; failed: number; cost: number | null; medianTimeToFirstTokenMs: number | null }> };
    const byModel = await json<Report>(h.request("/admin/usage?groupBy=model", { token: admin }));
    expect(byModel).toMatchObject({ from: "2026-10-24", to: "2026-11-22" });
    const house = byModel.items.find((r) => r.key === "house")!;
    expect(house).toMatchObject({ messages: 2, credits: 2, failed: 1 });
    // (7 + 1) tokens in at 1000 a million, (4 + 1) out at 2000 a million.
    expect(house.cost).toBeCloseTo((house.inputTokens * 1000 + house.outputTokens * 2000) / 1_000_000, 6);
    expect(house.medianTimeToFirstTokenMs).not.toBeNull();
    const byUser = await json<Report>(h.request("/admin/usage?groupBy=user", { token: admin }));
    // By person, each row names the account too (only then: a model's row has no name).
    expect(byUser.items.find((r) => r.key === id)).toMatchObject({ name, messages: 1, failed: 1, credits: 1 });
    expect(house).not.toHaveProperty("name");
    const byDay = await json<Report>(h.request("/admin/usage?from=2026-11-22&to=2026-11-22", { token: admin }));
    expect(byDay.items).toEqual([expect.objectContaining({ key: "2026-11-22", messages: 2, failed: 1 })]);

    const csv = await h.request("/admin/usage?groupBy=model&format=csv", { token: admin });
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("model,messages,credits,inputTokens,outputTokens,estimatedTokenRows,failed,medianTimeToFirstTokenMs,cost,ratingsUp,ratingsDown");
    expect(lines[1]).toMatch(/^house,2,2,/);
    await expectError(await h.request("/admin/usage?from=2026-11-23&to=2026-11-22", { token: admin }), 400, /from must be/);
    // The failed exchange is not in the person's own history.
    expect((await json<{ items: unknown[] }>(h.request("/usage/messages", { token }))).items).toHaveLength(1);
  });

  it("counts the replies' thumbs up and down per model, person and day, in JSON and CSV, each reply once", async () => {
    const admin = await boss();
    const token = await h.signIn("rater");
    const { id } = await json<{ id: string }>(h.request("/me", { token }));
    const sent: Array<{ contextId: string; messageId: string }> = [];
    for (const message of ["good", "bad", "meh", "taken back"]) {
      const res = await h.request("/chat/send", { method: "POST", token, json: { message, ...(sent[0] ? { contextId: sent[0].contextId } : {}) } });
      sent.push(await json(res));
    }
    const rate = (i: number, rating: "up" | "down" | null) =>
      h.request(`/contexts/${sent[i]!.contextId}/messages/${sent[i]!.messageId}/rating`, { method: "PUT", token, json: { rating } });
    expect((await rate(0, "up")).status).toBe(200);
    expect((await rate(1, "down")).status).toBe(200);
    await rate(3, "up");
    await rate(3, null);
    // Rated twice: counted once, as it stands.
    await rate(0, "down");
    await rate(0, "up");

    type Report = { items: Array<{ key: string; messages: number; ratingsUp: number; ratingsDown: number }> };
    const byModel = await json<Report>(h.request("/admin/usage?groupBy=model", { token: admin }));
    expect(byModel.items.find((r) => r.key === "house")).toMatchObject({ ratingsUp: 1, ratingsDown: 1 });
    const byUser = await json<Report>(h.request("/admin/usage?groupBy=user", { token: admin }));
    expect(byUser.items.find((r) => r.key === id)).toMatchObject({ messages: 4, ratingsUp: 1, ratingsDown: 1 });
    // Everyone else's rows: no rating.
    expect(byUser.items.filter((r) => r.key !== id).every((r) => r.ratingsUp === 0 && r.ratingsDown === 0)).toBe(true);
    const byDay = await json<Report>(h.request("/admin/usage?from=2026-11-22&to=2026-11-22", { token: admin }));
    expect(byDay.items).toEqual([expect.objectContaining({ key: "2026-11-22", ratingsUp: 1, ratingsDown: 1 })]);
    // A day before the replies were charged has none.
    expect((await json<Report>(h.request("/admin/usage?from=2026-11-21&to=2026-11-21", { token: admin }))).items).toEqual([]);

    const csv = (await (await h.request("/admin/usage?groupBy=model&format=csv", { token: admin })).text()).trim().split("\r\n");
    expect(csv[1]).toMatch(/^house,.*,1,1$/);
  });
});
