import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { reportFromUsageRows, type ReportRow, type UsageRowRead } from "../support/usage-oracle";
import { call, signIn } from "./support";

// The usage rollups on D1: GET /admin/usage reads them, and they say what the usage rows say
// (the rows of every file run in this workerd so far, and an erased account's as nobody's);
// and the migration's backfill statements run on D1 and make the same rows again.

const boss = () => signIn("worker-boss", { email: "boss@worker.test", email_verified: true });
const post = (path: string, headers: Record<string, string>, body: unknown) =>
  call(path, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });

async function usageRows(): Promise<UsageRowRead[]> {
  const { results } = await env.DB.prepare(
    "select user_id as userId, at, model, kind, outcome, credits, input_tokens as inputTokens, output_tokens as outputTokens, tokens_estimated as tokensEstimated, first_token_ms as firstTokenMs from usage_events",
  ).all<UsageRowRead>();
  return results;
}

describe("the usage rollups on D1", () => {
  it("report what the usage rows say by day, model and person, an erased account's as nobody's", async () => {
    const [ana, ben] = await Promise.all([signIn("worker-rollup-ana"), signIn("worker-rollup-ben")]);
    expect((await post("/chat/send", ana, { message: "one" })).status).toBe(200);
    expect(await (await post("/chat/send", ana, { message: "streamed", stream: true })).text()).toContain("event: done");
    expect(await (await post("/chat/send", ben, { message: "streamed too", stream: true })).text()).toContain("event: done");
    const { id } = (await (await call("/me", { headers: ben })).json()) as { id: string };
    expect((await call("/me", { method: "DELETE", headers: { ...ben, "Content-Type": "application/json" }, body: JSON.stringify({ confirm: id }) })).status).toBe(204);

    const today = new Date().toISOString().slice(0, 10);
    const range = { from: new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10), to: today };
    const admin = await boss();
    for (const groupBy of ["day", "model", "user"]) {
      const res = await call(`/admin/usage?from=${range.from}&to=${range.to}&groupBy=${groupBy}`, { headers: admin });
      // The ratings and names are reads of their own (test/worker/admin.test.ts, test/usage-report.test.ts).
      const { items: read } = (await res.json()) as { items: Array<ReportRow & { ratingsUp: number; ratingsDown: number; name?: string | null }> };
      const items = read.map(({ ratingsUp, ratingsDown, name, ...row }) => row);
      expect({ groupBy, items }).toEqual({ groupBy, items: reportFromUsageRows(await usageRows(), range, groupBy) });
      if (groupBy === "user") {
        expect(items.map((r) => r.key)).toContain(null);
        expect(items.map((r) => r.key)).not.toContain(id);
      }
    }
  });

  it("run the migration's backfill on D1, which makes the rows the chat path made (a person's times at their buckets' middles)", async () => {
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0019_"))!;
    const backfills = migration.queries.filter((q) => /^INSERT INTO/m.test(q.trim()));
    expect(backfills).toHaveLength(4);
    for (const statement of backfills) {
      // The SELECT alone: what the INSERT would write, compared with what the table holds.
      const [, table, columns] = /INSERT INTO `(\w+)` \(([^)]*)\)/.exec(statement)!;
      const select = statement.slice(statement.indexOf("\nSELECT") + 1).replace(/;\s*$/, "");
      const made = (await env.DB.prepare(select).raw()) as unknown[][];
      const held = (await env.DB.prepare(`select ${columns} from ${table}`).raw()) as unknown[][];
      // Every column but a person's log2 sum (the last), which the backfill takes at its buckets' middles.
      const exact = (rows: unknown[][]) => rows.map((r) => JSON.stringify(table === "usage_days" ? r : r.slice(0, -1))).sort();
      expect({ table, rows: exact(made) }).toEqual({ table, rows: exact(held) });
    }
  });
});
