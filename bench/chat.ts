// POST /chat/send through the whole app (JWT auth; one batch before the model call, the
// model call, one batch after: a charged, stored, searchable message) against Portkey's
// open-source AI gateway (@portkey-ai/gateway), a relay that stores nothing, on the same
// loopback upstream. 100 users, each with its own token, chatting into 10 existing contexts
// of their own, each with history, in turn (so a context grows by a message pair per 1,000
// requests, not per 100); the request limit at its default; the database at
// synchronous=FULL. Each app run starts a fresh process on a copy of the seeded database:
// a run adds ~9 exchanges to every context, and without the copy each run would carry the
// history of all those before it. Each server, the upstream and autocannon run in their own
// processes; the two sides are loaded in turn (A, B, A, B, …). Targets: throughput ≥ 1.0×
// Portkey's; round trips 1 before the model call and 1 after.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createApp } from "../src/app";
import { dbFromLibsql } from "../src/platform/db";
import { openDatabase } from "../src/platform/node/open-database";
import { CountingClient } from "../test/support/counting-client";
import { startFakeUpstream } from "../test/support/fake-upstream";
import {
  benchRuntime,
  benchServerEnv,
  benchToken,
  compare,
  load,
  machine,
  median,
  keepProfile,
  profileByPackage,
  profileTable,
  ratioText,
  runTable,
  serveChild,
  spawnServer,
  writeSection,
} from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const users = 100;
const contextsPerUser = 10;
const turns = 5; // exchanges already in each context
const config = { DAILY_CREDITS: "1000000000" };

const upstreamModule = resolve(import.meta.dirname, "../test/support/fake-upstream.ts");
const upstream = await spawnServer(
  [
    "--import",
    "tsx",
    "--input-type=module",
    "-e",
    `import { startFakeUpstream } from ${JSON.stringify(upstreamModule)};
     const u = await startFakeUpstream({ record: false });
     console.log("UPSTREAM " + u.baseUrl);`,
  ],
  {},
  /UPSTREAM (\S+)/,
);

// Portkey's gateway, as its npm package starts it (headless, no UI).
const require = createRequire(import.meta.url);
const portkeyEntry = join(resolve(require.resolve("@portkey-ai/gateway/package.json"), ".."), "build/start-server.js");
const portkeyPort = 20000 + Math.floor(Math.random() * 20000);
const portkey = await spawnServer([portkeyEntry, `--port=${portkeyPort}`, "--headless"], { NODE_ENV: "production" }, /Ready for connections/);
portkey.url = `http://127.0.0.1:${portkeyPort}`;

// Seed: every user's context with `turns` exchanges, through the app in this process.
const dir = mkdtempSync(join(tmpdir(), "bench-chat-"));
const dbUrl = `file:${join(dir, "bench.db")}`;
const seeded = await openDatabase(dbUrl);
const seedUpstream = await startFakeUpstream({ record: false });
const seedRuntime = await benchRuntime({ ...config, SVC_MODEL_BASE_URL: seedUpstream.baseUrl });
// Through a client that counts the round trips of the probes below.
const counting = new CountingClient(seeded.client);
const seedDb = dbFromLibsql(counting);
const seedApp = createApp(() => ({ ...seedRuntime, db: seedDb }));
const tokens: string[] = [];
const bodies: string[] = [];
const send = async (token: string, body: Record<string, unknown>) => {
  const res = await seedApp.request("/chat/send", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`seeding answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { contextId: string };
};
// Each user's contexts are seeded side by side (their batches commit together).
const seededUsers: Array<{ token: string; contexts: Array<string | undefined> }> = [];
for (let i = 0; i < users; i++) {
  const token = await benchToken(`user:bench-chat-${i}`);
  const contexts = await Promise.all(
    Array.from({ length: contextsPerUser }, async () => {
      let contextId: string | undefined;
      for (let t = 0; t < turns; t++) contextId = (await send(token, { message: `How often should I water plant ${t}?`, ...(contextId ? { contextId } : {}) })).contextId;
      return contextId;
    }),
  );
  seededUsers.push({ token, contexts });
}
// In the order requests take them: each user once, then each again with their next context.
for (let c = 0; c < contextsPerUser; c++) {
  for (const { token, contexts } of seededUsers) {
    tokens.push(token);
    bodies.push(JSON.stringify({ message: "And in winter, how often should I water a monstera?", contextId: contexts[c] }));
  }
}

// Round trips before and after the model call, one message at a time: the in-process
// upstream notes the driver's count when the call reaches it.
const trips = () => counting.trips;
const probes: Array<{ before: number; after: number }> = [];
for (let i = 0; i < 20; i++) {
  const start = trips();
  let before = -1;
  seedUpstream.onRequest = () => (before = trips() - start);
  await send(tokens[i]!, JSON.parse(bodies[i]!));
  probes.push({ before, after: trips() - start - before });
}
await seedUpstream.close();
// The seeded database, whole in its file: each app run starts from a copy of it.
await seeded.client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
const seededFile = join(dir, "bench.db");
const appEnv = { ...(await benchServerEnv(dbUrl, { ...config, SVC_MODEL_BASE_URL: upstream.url })), BENCH_SYNCHRONOUS: "FULL" };
let copies = 0;
let lastCopy: string | undefined;
const startApp = () => {
  // The previous run's copy goes first: its dirty pages, written back meanwhile, would tax the next run.
  if (lastCopy) for (const suffix of ["", "-wal", "-shm"]) rmSync(lastCopy + suffix, { force: true });
  lastCopy = join(dir, `run-${copies++}.db`);
  copyFileSync(seededFile, lastCopy);
  return serveChild("app", { ...appEnv, BENCH_DB: `file:${lastCopy}` });
};
seeded.client.close();

const completion = JSON.stringify({ model: "llama-3.3-70b", messages: [{ role: "user", content: "And in winter, how often should I water a monstera?" }] });
const json = { "content-type": "application/json" };
const portkeySpec = {
  url: `${portkey.url}/v1/chat/completions`,
  seconds,
  method: "POST",
  headers: { ...json, "x-portkey-provider": "openai", "x-portkey-custom-host": upstream.url, authorization: "Bearer sk-bench" },
  body: completion,
};
const appSpec = (app: { url: string }) => ({ url: `${app.url}/chat/send`, seconds, method: "POST", headers: json, tokens, bodies });

// Portkey serves every run from one process: warmed up long enough that its first run is not its slowest.
await load("warmup", { ...portkeySpec, seconds: 5 });

console.log("chat: Portkey vs app, interleaved");
const result = await compare(
  { label: "relay: Portkey AI gateway (@portkey-ai/gateway) → upstream", server: portkey, spec: portkeySpec },
  { label: `app: POST /chat/send (JWT, ${users} users, ${users * contextsPerUser} existing contexts) → upstream`, start: startApp, spec: appSpec },
  repeats,
);
const app = await startApp();
await load("warmup", { ...appSpec(app), seconds: 1 });
const profiled = await app.profile(() => load("profile", appSpec(app)));
keepProfile("chat", profiled.profile);
const byPackage = profileByPackage(profiled.profile, profiled.result.requests, profiled.cpuUs);
app.stop();
portkey.stop();
upstream.stop();

const maxBefore = Math.max(...probes.map((p) => p.before));
const maxAfter = Math.max(...probes.map((p) => p.after));
const errors = result.runs.reduce((n, r) => n + r.a.errors + r.a.non2xx + r.b.errors + r.b.non2xx, 0);
const body = `${machine()}; ${repeats} pairs of ${seconds} s runs, interleaved, 16 connections, no think time. The app (synchronous=FULL, WAL), Portkey, the loopback upstream and autocannon each run in their own process; CPU µs/req is the serving process's (utime + stime from /proc, all its threads), and the part of it its main thread spent. Each app user has ${contextsPerUser} contexts of ${turns * 2} messages each and sends into them in turn. Each app run starts a fresh process on a copy of the seeded database, so that every run sends into contexts with the same history, and warms it up for 1 s; Portkey keeps no state and serves every run from one process.

${runTable(result)}

- Throughput app / Portkey, median of ${repeats} pairs (range): **${ratioText(result.ratio)}** (target ≥ 1.0×): ${result.ratio.median >= 1 ? "met" : "NOT met"}.
- CPU per request, median: Portkey **${median(result.runs.map((r) => r.a.cpuUsPerRequest)).toFixed(0)} µs**, app **${median(result.runs.map((r) => r.b.cpuUsPerRequest)).toFixed(0)} µs**; Portkey / app ${ratioText(result.cpuRatio)}.
- Database round trips per message, counted at the driver one message at a time (JWT, existing context): **${maxBefore} before the model call, ${maxAfter} after** (targets: 1 and 1).
- Errors and non-2xx: ${errors} (target 0).

CPU profile of the app's main thread (its event loop; the database thread, not sampled, runs SQLite, that is libsql: its share is the process's CPU less the main thread's, in the table above) over one more ${seconds} s run (self time by package, native frames counted for their caller, scaled to that thread's CPU time over that run, µs per message; the profiler adds some overhead):

${profileTable(byPackage)}`;
console.log(`\n## Chat\n\n${body}\n`);
writeSection("Chat", body);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
