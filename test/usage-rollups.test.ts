import { sql } from "drizzle-orm";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIRST_TOKEN_BUCKETS, usageEvents } from "../schema/index";
import { utcDay } from "../src/features/account/credits";
import { bucketMiddleLog2, firstTokenBucket, firstTokenLog2, geometricMeanOf, medianOf } from "../src/features/account/first-token-histogram";
import { reportFromUsageRows, type ReportRow } from "./support/usage-oracle";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { createHarness, type Harness } from "./support/harness";

// GET /admin/usage reads rollups kept by the batches that write usage rows. Checked against
// the usage rows themselves (the report as they make it): per day, model and person, over
// ranges that start and end inside the traffic, with a reply stored after midnight for the
// day before, failures, titles and an erased account; then the same rollups made again by
// the migration's backfill.

const PRICES = { house: { inputPricePerMillion: 1000, outputPricePerMillion: 2000 } };
let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  const MODELS = JSON.stringify([
    { id: "house", protocol: "openai", baseUrl: up.baseUrl, upstream: "house-8b", default: true, ...PRICES.house },
    { id: "cellar", protocol: "openai", baseUrl: up.baseUrl, upstream: "cellar-70b" },
  ]);
  h = await createHarness({ env: { MODELS, ADMINS: "boss@example.com", MODEL_TIMEOUT_MS: "5000", RATE_LIMIT_PER_MINUTE: "0" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});

type Row = ReportRow;
const boss = () => h.signIn("boss", { email: "boss@example.com", email_verified: true });
const send = (token: string, body: Record<string, unknown>) => h.request("/chat/send", { method: "POST", token, json: body });

async function report(from: string, to: string, groupBy: string): Promise<Row[]> {
  const res = await h.request(`/admin/usage?from=${from}&to=${to}&groupBy=${groupBy}`, { token: await boss() });
  expect(res.status).toBe(200);
  // The ratings and names are reads of their own, checked in usage-report.test.ts.
  const items = ((await res.json()) as { items: Array<Row & { ratingsUp: number; ratingsDown: number; name?: string | null }> }).items;
  return items.map(({ ratingsUp, ratingsDown, name, ...row }) => row);
}

/** The report as the usage rows make it (test/support/usage-oracle.ts). */
async function fromUsageRows(from: string, to: string, groupBy: string, log2?: (ms: number) => number): Promise<Row[]> {
  const rows = (await h.db.select().from(usageEvents)).map((e) => ({ ...e, at: e.at.getTime() }));
  return reportFromUsageRows(rows, { from, to }, groupBy, { prices: PRICES, log2 });
}

const RANGES: Array<[string, string]> = [
  ["2026-11-20", "2026-11-22"],
  ["2026-11-20", "2026-11-20"],
  ["2026-11-21", "2026-11-21"],
  ["2026-11-21", "2026-11-22"],
  ["2026-11-22", "2026-11-22"],
  ["2026-10-01", "2026-11-30"],
];

async function expectReportsFromUsageRows() {
  for (const [from, to] of RANGES) {
    for (const groupBy of ["day", "model", "user"]) {
      expect({ from, to, groupBy, items: await report(from, to, groupBy) }).toEqual({ from, to, groupBy, items: await fromUsageRows(from, to, groupBy) });
    }
  }
}

describe("the usage rollups", () => {
  it("report what the usage rows say, by day, model and person, over any range", { timeout: 60_000 }, async () => {
    const [ann, bob, cyd] = await Promise.all(["ann", "bob", "cyd"].map((n) => h.signIn(`rollup-${n}`)));
    h.clock.set("2026-11-20T09:00:00.000Z");
    for (const token of [ann!, bob!]) expect((await send(token, { message: "one" })).status).toBe(200);
    expect(await (await send(cyd!, { message: "streamed", stream: true })).text()).toContain("event: done");
    up.mode = "fail";
    expect((await send(ann!, { message: "fails", model: "cellar" })).status).toBe(502);
    up.mode = "ok";
    await h.settled();

    // Ann's reply begins before midnight and is stored after it, once her next day's message is.
    h.clock.set("2026-11-21T23:59:50.000Z");
    up.holds = () => true;
    // Its stream begins once the model has begun: the exchange is charged and running.
    const late = (await send(ann!, { message: "late", stream: true, model: "cellar" })).body!.getReader();
    expect(new TextDecoder().decode((await late.read()).value)).toContain("data:");
    up.holds = undefined;
    h.clock.set("2026-11-22T00:00:10.000Z");
    expect(await (await send(ann!, { message: "next day", model: "cellar", stream: true })).text()).toContain("event: done");
    expect((await send(bob!, { message: "two", model: "cellar" })).status).toBe(200);
    up.releaseHeld();
    let rest = "";
    for (let piece = await late.read(); !piece.done; piece = await late.read()) rest += new TextDecoder().decode(piece.value);
    expect(rest).toContain("event: done");
    // Stored with the time it began: the day before Ann's next message.
    expect((await h.db.select().from(usageEvents)).filter((e) => e.model === "cellar" && e.kind === "message" && e.outcome === "ok").map((e) => utcDay(e.at)).sort()).toEqual(["2026-11-21", "2026-11-22", "2026-11-22"]);
    await h.settled();
    await expectReportsFromUsageRows();

    // Cyd erases her account: her usage stays in the totals, as nobody's.
    const { id } = (await (await h.request("/me", { token: cyd! })).json()) as { id: string };
    expect((await h.request("/me", { method: "DELETE", token: cyd!, json: { confirm: id } })).status).toBe(204);
    const byPerson = await report("2026-11-20", "2026-11-22", "user");
    expect(byPerson.map((r) => r.key)).toContain(null);
    expect(byPerson.map((r) => r.key)).not.toContain(id);
    expect(await h.db.all(sql`select 1 from usage_user_totals where user_id = ${id} union all select 1 from usage_user_cumulative where user_id = ${id}`)).toEqual([]);
    await expectReportsFromUsageRows();
  });

  it("are made again by the migration's backfill from the usage rows, a person's times taken at their buckets' middles", async () => {
    const migration = readFileSync(resolve(import.meta.dirname, "../migrations/0019_usage_rollups.sql"), "utf8");
    for (const table of ["usage_days", "usage_user_totals", "usage_user_cumulative", "usage_erased_days"]) await h.db.run(sql.raw(`delete from ${table}`));
    for (const statement of migration.split("--> statement-breakpoint").filter((s) => /^\s*INSERT INTO/m.test(s))) await h.db.run(sql.raw(statement));
    const atMiddle = (ms: number) => bucketMiddleLog2(firstTokenBucket(ms));
    for (const [from, to] of RANGES) {
      for (const groupBy of ["day", "model", "user"]) {
        expect({ from, to, groupBy, items: await report(from, to, groupBy) }).toEqual({ from, to, groupBy, items: await fromUsageRows(from, to, groupBy, atMiddle) });
      }
    }
  });

  it("are kept two years: the daily job deletes older rows but each person's last totals before them, and the report starts there", async () => {
    const pairs = (await h.db.all<{ n: number }>(sql`select count(*) as n from usage_user_totals`))[0]!.n;
    const result = await runDailyRollover(h.deps, { scheduledTime: new Date("2028-11-23T00:00:00.000Z") });
    expect(result.prunedUsageRollups).toBeGreaterThan(0);
    expect(await h.db.all(sql`select day from usage_days union all select day from usage_erased_days`)).toEqual([]);
    // One row left per person and model: their totals at the end of their last day.
    expect((await h.db.all<{ n: number }>(sql`select count(*) as n from usage_user_cumulative`))[0]!.n).toBe(pairs);
    h.clock.set("2028-11-23T12:00:00.000Z");
    for (const groupBy of ["day", "model", "user"]) {
      expect(await report("2026-11-20", "2026-11-22", groupBy)).toEqual([]);
      expect(await report("2027-11-25", "2028-11-23", groupBy)).toEqual([]);
    }
  });

  it("read a median off the histogram within its bucket, and a person's as the geometric mean", () => {
    const times = [300, 320, 400, 410, 500];
    const histogram = Array<number>(FIRST_TOKEN_BUCKETS).fill(0);
    for (const ms of times) histogram[firstTokenBucket(ms)]!++;
    const median = medianOf(histogram)!;
    expect(median / 400).toBeGreaterThan(0.9);
    expect(median / 400).toBeLessThan(1.1);
    expect(medianOf(Array<number>(FIRST_TOKEN_BUCKETS).fill(0))).toBeNull();
    expect([0, 7, 8, 11, 12, 16, 125, 16_383, 16_384, 99_999].map(firstTokenBucket)).toEqual([0, 0, 1, 1, 2, 3, 8, 22, 23, 23]);
    expect(geometricMeanOf(2, firstTokenLog2(100) + firstTokenLog2(400))).toBe(200);
    expect(geometricMeanOf(0, 0)).toBeNull();
  });
});
