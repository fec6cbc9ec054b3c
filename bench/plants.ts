// GET /plants?limit=20 with a JWT through the whole app (1,000 users, each with its own
// token, the request limit at its default) against a floor: a bare Hono + @libsql/client
// handler running the same indexed query for the same users in turn, with no auth. Each server runs in its own process,
// loaded in turn (A, B, A, B, …) by autocannon in a third. Target: app ≥ 1.0× floor,
// zero errors, one round trip a request.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app";
import { userIdFor } from "../src/platform/auth/identity";
import { dbFromLibsql } from "../src/platform/db";
import { openDatabase } from "../src/platform/node/open-database";
import { CountingClient } from "../test/support/counting-client";
import { listPlants } from "../src/features/plants/plants";
import {
  BENCH_ISSUER,
  benchRuntime,
  benchServerEnv,
  benchToken,
  compare,
  machine,
  median,
  keepProfile,
  profileByPackage,
  profileTable,
  ratioText,
  runTable,
  serveChild,
  writeSection,
  load,
  PLANT_PAGE,
} from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const users = 1000;
const dir = mkdtempSync(join(tmpdir(), "bench-plants-"));
const dbUrl = `file:${join(dir, "bench.db")}`;

// Seed: 200 plants for the first user through the API itself, then the same rows copied to
// every other user in SQL (the API would take minutes).
const { client, db } = await openDatabase(dbUrl);
const runtime = await benchRuntime();
const seedApp = createApp(() => ({ ...runtime, db }));
const tokens: string[] = [];
for (let i = 0; i < users; i++) tokens.push(await benchToken(`user:bench-${i}`));
for (let id = 1; id <= 200; id++) {
  const res = await seedApp.request("/plants", {
    method: "POST",
    headers: { Authorization: `Bearer ${tokens[0]}`, "Content-Type": "application/json" },
    body: JSON.stringify({ id, name: `plant ${id}`, tag: id % 2 ? "odd" : undefined }),
  });
  if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
}
const first = await userIdFor(BENCH_ISSUER, "user:bench-0");
const columns = async (table: string) => (await client.execute(`select name from pragma_table_info('${table}')`)).rows.map((r) => String(r.name));
const userColumns = await columns("users");
const plantColumns = await columns("plants");
// A copy of the first user's rows with the given columns replaced (bound in column order).
const copy = (table: string, cols: string[], key: string, replaced: string[]) =>
  `insert into ${table} (${cols.join(", ")}) select ${cols.map((c) => (replaced.includes(c) ? "?" : c)).join(", ")} from ${table} where ${key} = ?`;
const statements = [];
const owners = [first];
for (let i = 1; i < users; i++) {
  const id = await userIdFor(BENCH_ISSUER, `user:bench-${i}`);
  owners.push(id);
  const userArgs = userColumns.filter((c) => c === "id" || c === "subject").map((c) => (c === "id" ? id : `user:bench-${i}`));
  statements.push({ sql: copy("users", userColumns, "id", ["id", "subject"]), args: [...userArgs, first] });
  statements.push({ sql: copy("plants", plantColumns, "owner_id", ["owner_id"]), args: [id, first] });
}
await client.batch(statements, "write");
// The floors must run what the app runs: the statement of a plant page, as the app prepares it.
const sent: string[] = [];
await listPlants(dbFromLibsql(new CountingClient(client, { onStatement: (sql) => sent.push(sql) })), first, { limit: 20 });
if (sent[0]?.replace(/\s+/g, " ") !== PLANT_PAGE.replace(/\s+/g, " ")) throw new Error(`PLANT_PAGE differs from the app's statement:\n${sent[0]}`);
client.close();

const app = await serveChild("app", await benchServerEnv(dbUrl));
const floor = await serveChild("plants-floor", { BENCH_DB: dbUrl, BENCH_OWNERS: JSON.stringify(owners) });
const appSpec = { url: `${app.url}/plants?limit=20`, seconds, tokens };
const floorSpec = { url: `${floor.url}/plants?limit=20`, seconds };

// Warm up both (JIT; every token verified once, as a returning user's would be).
await load("warmup", { ...floorSpec, seconds: 2 });
await load("warmup", { ...appSpec, seconds: 3 });

console.log("plants: floor vs app, interleaved");
const result = await compare(
  { label: "floor: bare Hono + @libsql/client, same query and users, no auth", server: floor, spec: floorSpec },
  { label: "app: GET /plants?limit=20 with a JWT (ES256), 1,000 users", server: app, spec: appSpec },
  repeats,
);

// Where the app's CPU goes, by package: a profile of one more run.
const profiled = await app.profile(() => load("profile", appSpec));
keepProfile("plants", profiled.profile);
const byPackage = profileByPackage(profiled.profile, profiled.result.requests, profiled.cpuUs);
const floorProfiled = await floor.profile(() => load("profile", floorSpec));
const floorByPackage = profileByPackage(floorProfiled.profile, floorProfiled.result.requests, floorProfiled.cpuUs);
app.stop();
floor.stop();

// Round trips: the app once more, in this process, counted at the driver.
const counted = await openDatabase(dbUrl);
const counting = new CountingClient(counted.client);
const countedDb = dbFromLibsql(counting);
const countedApp = createApp(() => ({ ...runtime, db: countedDb }));
const trips = () => counting.trips;
const before = trips();
for (let i = 0; i < 200; i++) {
  const res = await countedApp.request("/plants?limit=20", { headers: { Authorization: `Bearer ${tokens[i % users]}` } });
  if (res.status !== 200) throw new Error(`GET /plants answered ${res.status}`);
}
const tripsPerRequest = (trips() - before) / 200;
counted.client.close();

const errors = result.runs.reduce((n, r) => n + r.b.errors + r.b.non2xx, 0);
const appCpu = median(result.runs.map((r) => r.b.cpuUsPerRequest));
const floorCpu = median(result.runs.map((r) => r.a.cpuUsPerRequest));
const body = `${machine()}; ${repeats} pairs of ${seconds} s runs, interleaved, 16 connections. Each server runs in its own process, autocannon in a third; CPU µs/req is the serving process's (utime + stime from /proc).

${runTable(result)}

- Throughput app / floor, median of ${repeats} pairs (range): **${ratioText(result.ratio)}** (target ≥ 1.0×): ${result.ratio.median >= 1 ? "met" : "NOT met"}.
- CPU per request, median: floor **${floorCpu.toFixed(0)} µs**, app **${appCpu.toFixed(0)} µs**; floor / app ${ratioText(result.cpuRatio)}.
- Database round trips per request: **${tripsPerRequest.toFixed(3)}** (target 1).
- Errors and non-2xx: ${errors} (target 0).

CPU profile of the app's main thread (its event loop; the database thread, not sampled, runs SQLite, that is libsql: its share is the process's CPU less the main thread's, in the table above) over one more ${seconds} s run (self time by package, native frames counted for their caller, scaled to that thread's CPU time over that run, µs per request; the profiler adds some overhead):

${profileTable(byPackage)}

The floor's, likewise:

${profileTable(floorByPackage)}`;
console.log(`\n## Plants\n\n${body}\n`);
writeSection("Plants", body);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
