// GET /admin/usage over a year of 10,000 people's usage, through the whole app (JWT, the
// admin check, zod, the report, JSON), for groupBy=day, model and user, against the report as
// it was: two reads over usage_events (the sums, then every time to first token for the
// medians). Seeded in SQL: each person is active on some days (a fifth of them on ~30% of days,
// the rest on ~3%), sending 1 to 15 messages on such a day, to three models; the rollups are
// then filled by the migration's own INSERTs (migrations/0019_usage_rollups.sql), as the chat
// path would have filled them. Sequential requests; target: each under 200 ms.
// npx tsx bench/usage.ts (BENCH_USAGE_USERS, BENCH_USAGE_DAYS, BENCH_USAGE_RUNS to resize;
// BENCH_USAGE_RAW=0 leaves out the report as it was).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createApp } from "../src/app";
import { userIdFor } from "../src/platform/auth/identity";
import { openDatabase } from "../src/platform/node/open-database";
import { BENCH_ISSUER, benchRuntime, benchToken, machine, median, writeSection } from "./support";

const USERS = Number(process.env.BENCH_USAGE_USERS ?? 10_000);
const DAYS = Number(process.env.BENCH_USAGE_DAYS ?? 365);
const RUNS = Math.max(3, Number(process.env.BENCH_USAGE_RUNS ?? 5));
const RAW = process.env.BENCH_USAGE_RAW !== "0";
const START = Date.parse("2025-01-01T00:00:00.000Z");
const DAY_MS = 86_400_000;
const dayOf = (n: number) => new Date(START + n * DAY_MS).toISOString().slice(0, 10);

const dir = mkdtempSync(join(tmpdir(), "bench-usage-"));
const { client, db } = await openDatabase(`file:${join(dir, "bench.db")}`);
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(0);

// People, with how many days in a thousand each is active on.
let started = performance.now();
await client.execute({
  sql: `insert into users (id, issuer, subject, name, created_at)
        with recursive u(n) as (select 0 union all select n + 1 from u where n < ? - 1)
        select printf('usr_bench%06d', n), ?, printf('user:%d', n), printf('person %d', n), 0 from u`,
  args: [USERS, BENCH_ISSUER],
});
await client.execute(`create table bench_activity as select id as user_id, case when abs(random()) % 5 = 0 then 300 else 30 end as per_mille from users`);
// Which days a person is active on: a draw per person and day (\`+ d.n * 0\` ties the draw to
// the day: without it SQLite draws once per person, in the outer loop). Each active person-day's messages: a model (70% svc-70b at 1 credit, 20% gpt-4o and 10%
// claude-sonnet-4 at 3), a streamed reply's time to first token (80% of them; spread around
// the model's own), 1% failed, 5% titles; all at random times of the day.
await client.execute({
  sql: `insert into usage_events (id, user_id, at, model, credits, kind, input_tokens, output_tokens, tokens_estimated, first_token_ms, outcome)
        with recursive d(n) as (select 0 union all select n + 1 from d where n < ? - 1),
          k(n) as (select 1 union all select n + 1 from k where n < 15),
          active as materialized (select d.n as day, a.user_id, 1 + abs(random()) % 15 as messages from d join bench_activity a where (abs(random()) + d.n * 0) % 1000 < a.per_mille),
          calls as materialized (select day, user_id, k.n as k, abs(random()) % 100 as pick, abs(random()) % 100 as fate, abs(random()) % 1000 as spread,
            abs(random()) % ${DAY_MS} as time, abs(random()) % 3000 as input, abs(random()) % 800 as output from active join k on k.n <= active.messages)
        select printf('use_%d_%s_%d', day, user_id, k), user_id, ? + day * ${DAY_MS} + time,
          case when pick < 70 then 'svc-70b' when pick < 90 then 'gpt-4o' else 'claude-sonnet-4' end,
          case when fate < 1 or fate >= 95 then 0 when pick < 70 then 1 else 3 end,
          case when fate >= 95 then 'title' else 'message' end,
          case when fate < 1 then 0 else 50 + input end, case when fate < 1 then 0 else 20 + output end, 0,
          case when fate < 1 or fate >= 75 then null else cast((case when pick < 70 then 400 when pick < 90 then 700 else 900 end) * (0.6 + spread / 600.0) as integer) end,
          case when fate < 1 then 'failed' else 'ok' end
        from calls`,
  args: [DAYS, START],
});
// The rated replies (for the report's thumbs up and down): one in fifty answered messages, in a
// conversation of each person's, written when its usage row says, two thirds of them thumbs up.
await client.execute("insert into contexts (id, user_id, name, created_at, updated_at) select 'ctx_' || user_id, user_id, 'bench', 0, 0 from bench_activity");
await client.execute(`insert into messages (id, context_id, user_id, role, content, model, created_at, rating)
  select 'msg_' || id, 'ctx_' || user_id, user_id, 'assistant', 'a reply', model, at, case when abs(random()) % 3 = 0 then -1 else 1 end
  from usage_events where kind = 'message' and outcome = 'ok' and abs(random()) % 50 = 0`);
const events = Number((await client.execute("select count(*) as n from usage_events")).rows[0]!.n);
const rated = Number((await client.execute("select count(*) as n from messages")).rows[0]!.n);
const seedSeconds = seconds(started);
// The rollups, filled as the migration fills them from the usage rows it finds.
started = performance.now();
const migration = readFileSync(resolve(import.meta.dirname, "../migrations/0019_usage_rollups.sql"), "utf8");
for (const statement of migration.split("--> statement-breakpoint").filter((s) => /^\s*INSERT INTO/m.test(s))) await client.execute(statement);
const rollupSeconds = seconds(started);
const counts = Object.fromEntries(
  await Promise.all(["usage_days", "usage_user_totals", "usage_user_cumulative", "usage_erased_days"].map(async (t) => [t, Number((await client.execute(`select count(*) as n from ${t}`)).rows[0]!.n)] as const)),
);
await client.execute("analyze");
// As a server finds its database: the seeding's pages checkpointed into the file, the WAL emptied.
await client.execute("pragma wal_checkpoint(TRUNCATE)");

const adminId = await userIdFor(BENCH_ISSUER, "user:admin");
await client.execute({ sql: "insert into users (id, issuer, subject, name, created_at) values (?, ?, 'user:admin', 'admin', 0)", args: [adminId, BENCH_ISSUER] });
const runtime = await benchRuntime({ ADMINS: adminId });
const app = createApp(() => ({ ...runtime, db }));
const headers = { Authorization: `Bearer ${await benchToken("user:admin")}` };

async function viaApp(query: string): Promise<number> {
  const res = await app.request(`/admin/usage?${query}`, { headers });
  if (res.status !== 200) throw new Error(`the report failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { items: unknown[] }).items.length;
}

/** The report as it was (before the rollups): the sums and every time to first token, over usage_events. */
async function asItWas(from: string, to: string, groupBy: string): Promise<number> {
  const key = groupBy === "model" ? "model" : groupBy === "user" ? "user_id" : "strftime('%Y-%m-%d', at / 1000, 'unixepoch')";
  const range = [Date.parse(`${from}T00:00:00.000Z`), Date.parse(`${to}T00:00:00.000Z`) + DAY_MS];
  const [sums, firsts] = await Promise.all([
    client.execute({
      sql: `select ${key} as key, model, sum(kind = 'message' and outcome = 'ok'), sum(credits), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
              sum(coalesce(tokens_estimated, 0)), sum(outcome = 'failed') from usage_events where at >= ? and at < ? group by 1, 2`,
      args: range,
    }),
    client.execute({ sql: `select ${key} as key, first_token_ms from usage_events where at >= ? and at < ? and first_token_ms is not null order by 1, 2`, args: range }),
  ]);
  // The medians came from sorting every time in JavaScript; reading them is the most of it.
  void firsts;
  return sums.rows.length;
}

interface Timing {
  label: string;
  ms: number[];
  cpuMs: number[];
  rows: number;
}
async function time(label: string, run: () => Promise<number>, runs: number): Promise<Timing> {
  await run(); // warm the page cache and the JWT cache
  const out: Timing = { label, ms: [], cpuMs: [], rows: 0 };
  for (let i = 0; i < runs; i++) {
    const cpu = process.cpuUsage();
    const t = performance.now();
    out.rows = await run();
    out.ms.push(performance.now() - t);
    const used = process.cpuUsage(cpu);
    out.cpuMs.push((used.user + used.system) / 1000);
  }
  return out;
}

const year = { from: dayOf(0), to: dayOf(DAYS - 1) };
// The same year less its first and last half months: whole months in the middle, days at both ends.
const unaligned = { from: dayOf(15), to: dayOf(DAYS - 17) };
const timings: Timing[] = [];
for (const groupBy of ["day", "model", "user"]) {
  timings.push(await time(`app: groupBy=${groupBy}, ${year.from} … ${year.to}`, () => viaApp(`from=${year.from}&to=${year.to}&groupBy=${groupBy}`), RUNS));
}
timings.push(await time(`app: groupBy=user, ${unaligned.from} … ${unaligned.to}`, () => viaApp(`from=${unaligned.from}&to=${unaligned.to}&groupBy=user`), RUNS));
if (RAW) {
  for (const groupBy of ["day", "model", "user"]) timings.push(await time(`as it was: groupBy=${groupBy} over usage_events, ${year.from} … ${year.to}`, () => asItWas(year.from, year.to, groupBy), 3));
}

const f = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
const spread = (values: number[]) => `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
const rows = timings.map((t) => `| ${t.label} | ${spread(t.ms)} | ${spread(t.cpuMs)} | ${t.ms.length} | ${t.rows.toLocaleString("en")} |`).join("\n");
const app3 = timings.slice(0, 3);
const met = app3.every((t) => median(t.ms) < 200);
const body = `${machine()}; ${USERS.toLocaleString("en")} people over ${DAYS} days from ${year.from}: ${events.toLocaleString("en")} usage rows seeded in ${seedSeconds} s (a fifth of the people active on ~30% of days, the rest on ~3%; 1 to 15 model calls on an active day) and ${rated.toLocaleString("en")} rated replies, then the rollups filled by the migration's INSERTs in ${rollupSeconds} s: ${Object.entries(counts)
  .map(([t, n]) => `${t} ${n.toLocaleString("en")} rows`)
  .join(", ")}. Sequential in-process requests as an admin; ms, median (range) of the runs; CPU is the whole process's (both threads), steadier than wall time on a shared machine.

| run | wall ms | CPU ms | runs | rows |
|---|---:|---:|---:|---:|
${rows}

- Each groupBy over the whole year under 200 ms (wall, median): ${met ? "met" : "NOT met"}${met ? "" : " on this machine at this load"}.
- By person over the year less its first and last half months (two index lookups more per person and model): ${median(timings[3]!.ms) < 200 ? "under" : "NOT under"} 200 ms.
- The report as it was read every usage row of the range twice (the sums, then each time to first token for the medians, sorted); usage_events keeps 90 days, so it could not even cover a year. The rollups answer from one row per day and model, or from two rows per person and model (the totals at the range's end less those before it), whatever the range.`;
console.log(`\n## Usage report\n\n${body}\n`);
writeSection("Usage report", body);

client.close();
rmSync(dir, { recursive: true, force: true });
