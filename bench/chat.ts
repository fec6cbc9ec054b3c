// POST /chat/send as API callers run it (an API key, one batch before the model call, the
// model call, one batch after: a charged, stored, searchable message), in two parts:
//
// 1. The mix, against Portkey's open-source AI gateway (@portkey-ai/gateway), a relay that
//    stores nothing, on the same loopback upstream: 50 users, each with an API key; every
//    other request opens a new context, the rest continue one of 50 contexts (one a user),
//    which grow through the run. Target: throughput ≥ 1.0× Portkey's.
// 2. The depth sweep: the cost of one message with 10, 100 and 1,000 messages of history
//    above it. Each request follows (`parentId`) the reply at that depth of one of 16
//    contexts, so every message of a run is at exactly that depth. Messages are the size of
//    real ones (a 200-character question, a 1,200-character answer) and the model's window
//    is 8,192 tokens, so history passes it between depth 10 and depth 100. Target: a message
//    at depth 1,000 costs ≤ 1.5× one at depth 10 (CPU per message of the serving process).
//
// Each run starts a fresh server process, the app's on a copy of the seeded database (the
// contexts grow during a run); in the mix, both sides are warmed up alike first. Each
// server, the upstream and autocannon run in their own processes; the sides are loaded in
// turn (A, B, A, B, …), each pair `BENCH_REPEATS` times.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
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
  keepProfile,
  load,
  machine,
  measure,
  median,
  MIX_QUESTION,
  profileByPackage,
  portkeySide,
  profileTable,
  ratioText,
  runTable,
  serveChild,
  spawnServer,
  writeSection,
  type Run,
  type Served,
} from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const mixUsers = 50;
const mixTurns = 5; // exchanges already in each continued context
const depths = [10, 100, 1000];
const sweepContexts = 16;
const WINDOW = 8192;

// One model, as an operator configures one: svc-70b on the loopback upstream, an 8k window.
const models = (baseUrl: string) =>
  JSON.stringify([{ id: "svc-70b", name: "Service 70B", protocol: "openai", baseUrl, upstream: "llama-3.3-70b", contextWindow: WINDOW, default: true }]);
const config = { DAILY_CREDITS: "1000000000" };

// A question and an answer of the size people write and models reply: the upstream answers
// a question marked (long) with about 1,200 characters.
const LONG_QUESTION = `(long) ${"How much light does a fiddle-leaf fig need near a north-facing window in winter? ".repeat(3)}`.slice(0, 200);
const upstreamScript = (module: string) => `import { startFakeUpstream } from ${JSON.stringify(module)};
  const u = await startFakeUpstream({ record: false });
  const long = "Place it within a metre of the window and turn it a quarter every week. ".repeat(17);
  const echo = u.reply;
  u.reply = (req) => { const text = echo(req); return text.includes("(long)") ? text.slice(0, 60) + long : text; };
  console.log("UPSTREAM " + u.baseUrl);`;
const upstreamModule = resolve(import.meta.dirname, "../test/support/fake-upstream.ts");
const upstream = await spawnServer(["--import", "tsx", "--input-type=module", "-e", upstreamScript(upstreamModule)], {}, /UPSTREAM (\S+)/);

// ---- Seeding, through the app in this process (its own loopback upstream, same replies).
const dir = mkdtempSync(join(tmpdir(), "bench-chat-"));
const dbUrl = `file:${join(dir, "bench.db")}`;
const seeded = await openDatabase(dbUrl);
const seedUpstream = await startFakeUpstream({ record: false });
{
  const echo = seedUpstream.reply;
  const long = "Place it within a metre of the window and turn it a quarter every week. ".repeat(17);
  seedUpstream.reply = (req) => {
    const text = echo(req);
    return typeof text === "string" && text.includes("(long)") ? text.slice(0, 60) + long : text;
  };
}
const seedEnv = { ...config, MODELS: models(`${seedUpstream.baseUrl}`) };
const seedRuntime = await benchRuntime(seedEnv);
const counting = new CountingClient(seeded.client);
const seedDb = dbFromLibsql(counting);
// Work a reply leaves running (a new context's title), kept as the Node server keeps it.
const background = new Set<Promise<unknown>>();
const seedApp = createApp(() => ({ ...seedRuntime, db: seedDb, background: (work) => void background.add(work) }));

async function call<T>(path: string, auth: Record<string, string>, body: Record<string, unknown>): Promise<T> {
  const res = await seedApp.request(path, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200 && res.status !== 201) throw new Error(`seeding ${path} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}
type Sent = { contextId: string; messageId: string };
/** A context of `exchanges` exchanges; its last reply's id. */
async function seedContext(key: string, exchanges: number, question: string): Promise<Sent> {
  let sent: Sent | undefined;
  for (let t = 0; t < exchanges; t++) {
    sent = await call<Sent>("/chat/send", { "x-api-key": key }, { message: `${question} ${t}`, ...(sent ? { contextId: sent.contextId } : {}) });
  }
  return sent!;
}

const users = await Promise.all(
  Array.from({ length: mixUsers }, async (_, i) => {
    const jwt = await benchToken(`user:bench-chat-${i}`);
    const { key } = await call<{ key: string }>("/keys", { authorization: `Bearer ${jwt}` }, { name: "bench" });
    return { key, context: await seedContext(key, mixTurns, "How often should I water plant") };
  }),
);
// The sweep's contexts: for each depth, `sweepContexts` of them, each of a user of its own.
const sweep = new Map<number, Array<{ key: string } & Sent>>();
for (const depth of depths) {
  sweep.set(
    depth,
    await Promise.all(users.slice(0, sweepContexts).map(async ({ key }) => ({ key, ...(await seedContext(key, depth / 2, LONG_QUESTION)) }))),
  );
}

// The mix's requests, in the order autocannon takes them: a user's new context, then the
// same user's context continued; the next user; and so on.
const mixTokens: string[] = [];
const mixBodies: string[] = [];
for (const { key, context } of users) {
  mixTokens.push(key, key);
  mixBodies.push(
    JSON.stringify({ message: MIX_QUESTION }),
    JSON.stringify({ message: "And in winter, how often should I water a monstera?", contextId: context.contextId }),
  );
}

// Round trips and upstream calls per message, one message at a time: the in-process
// upstream notes the driver's count when the call reaches it.
const probes: Array<{ before: number; after: number }> = [];
let upstreamCalls = 0;
seedUpstream.title = () => {
  upstreamCalls++; // a title request
  return "";
};
for (let i = 0; i < 20; i++) {
  const start = counting.trips;
  let before = -1;
  seedUpstream.onRequest = () => {
    upstreamCalls++;
    if (before < 0) before = counting.trips - start;
  };
  await call("/chat/send", { "x-api-key": mixTokens[i]! }, JSON.parse(mixBodies[i]!));
  probes.push({ before, after: counting.trips - start - before });
  await Promise.all(background); // a title request, if any, is counted as this message's
}
await seedUpstream.close();
await seeded.client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
seeded.client.close();

const seededFile = join(dir, "bench.db");
const appEnv = { ...(await benchServerEnv(dbUrl, { ...config, MODELS: models(upstream.url) })), BENCH_SYNCHRONOUS: "FULL" };
let copies = 0;
let lastCopy: string | undefined;
const startApp = () => {
  // The previous run's copy goes first: its dirty pages, written back meanwhile, would tax the next run.
  if (lastCopy) for (const suffix of ["", "-wal", "-shm"]) rmSync(lastCopy + suffix, { force: true });
  lastCopy = join(dir, `run-${copies++}.db`);
  copyFileSync(seededFile, lastCopy);
  return serveChild("app", { ...appEnv, BENCH_DB: `file:${lastCopy}` });
};

const json = { "content-type": "application/json" };
const mixSpec = (app: { url: string }) => ({ url: `${app.url}/chat/send`, seconds, method: "POST", headers: json, tokens: mixTokens, bodies: mixBodies });
const depthSpec = (depth: number) => (app: { url: string }) => {
  const contexts = sweep.get(depth)!;
  return {
    url: `${app.url}/chat/send`,
    seconds,
    method: "POST",
    headers: json,
    tokens: contexts.map((c) => c.key),
    bodies: contexts.map((c) => JSON.stringify({ message: LONG_QUESTION, contextId: c.contextId, parentId: c.messageId })),
  };
};

// ---- 1. The mix against Portkey.
// Each run of either side is a fresh process, warmed up for the same 5 s before it is
// measured. A server warmed up for only a second was still compiling its hot code in the
// background (V8's optimizing compiler: a fifth of the app's CPU over the next 5 s, by
// perf), which a server that has been up for a while no longer does; and one process kept
// for every run measured Portkey older, so warmer, at each run.
const WARMUP_SECONDS = 5;
console.log("chat mix: Portkey vs app, interleaved");
const mix = await compare(
  portkeySide("relay: Portkey AI gateway → upstream", upstream.url, { seconds, warmupSeconds: WARMUP_SECONDS }),
  { label: `app: POST /chat/send (API keys, ${mixUsers} users; half new contexts, half continuing 50)`, start: startApp, spec: mixSpec, warmupSeconds: WARMUP_SECONDS },
  repeats,
);
const profiledApp = await startApp();
await load("warmup", { ...mixSpec(profiledApp), seconds: WARMUP_SECONDS });
const profiled = await profiledApp.profile(() => load("profile", mixSpec(profiledApp)));
keepProfile("chat", profiled.profile);
const byPackage = profileByPackage(profiled.profile, profiled.result.requests, profiled.cpuUs);
profiledApp.stop();

// ---- 2. The depth sweep: depth 10, 100, 1,000 in turn, `repeats` times.
console.log("chat depth sweep, interleaved");
const sweepRuns = new Map<number, Run[]>(depths.map((d) => [d, []]));
for (let i = 0; i < repeats; i++) {
  for (const depth of depths) {
    const app: Served = await startApp();
    try {
      await load("warmup", { ...depthSpec(depth)(app), seconds: 1 });
      const run = await measure(`depth ${depth}`, app, depthSpec(depth)(app));
      sweepRuns.get(depth)!.push(run);
      console.log(`  ${i + 1}/${repeats} depth ${depth}: ${run.rps} req/s, ${run.cpuUsPerRequest.toFixed(0)} µs (main ${run.mainThreadUsPerRequest.toFixed(0)})`);
    } finally {
      const exited = new Promise((r) => app.proc.once("exit", r));
      app.stop();
      await exited;
    }
  }
}
upstream.stop();

const spreadOf = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted[sorted.length - 1]! };
};
// CPU per message at depth 1,000 over depth 10, per round of the sweep.
const deepRatio = spreadOf(sweepRuns.get(1000)!.map((r, i) => r.cpuUsPerRequest / sweepRuns.get(10)![i]!.cpuUsPerRequest));
const sweepTable = [
  "| depth | req/s (median) | CPU µs/message (median, range) | of which main thread | p50 ms | non-2xx |",
  "|---:|---:|---:|---:|---:|---:|",
  ...depths.map((d) => {
    const runs = sweepRuns.get(d)!;
    const cpu = spreadOf(runs.map((r) => r.cpuUsPerRequest));
    return `| ${d} | ${median(runs.map((r) => r.rps))} | ${cpu.median.toFixed(0)} (${cpu.min.toFixed(0)}–${cpu.max.toFixed(0)}) | ${median(runs.map((r) => r.mainThreadUsPerRequest)).toFixed(0)} | ${median(runs.map((r) => r.p50))} | ${runs.reduce((n, r) => n + r.non2xx + r.errors, 0)} |`;
  }),
].join("\n");

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const maxBefore = Math.max(...probes.map((p) => p.before));
const maxAfter = Math.max(...probes.map((p) => p.after));
const errors = mix.runs.reduce((n, r) => n + r.a.errors + r.a.non2xx + r.b.errors + r.b.non2xx, 0);
const body = `${machine()}; ${repeats} rounds of ${seconds} s runs, interleaved, 16 connections, no think time. The app (synchronous=FULL, WAL), Portkey, the loopback upstream and autocannon each run in their own process; CPU µs/req is the serving process's (utime + stime from /proc, all its threads), and the part of it its main thread spent. Each run of the mix starts a fresh process of its side (the app on a copy of the seeded database) and warms it up for ${WARMUP_SECONDS} s before measuring it. A run of the depth sweep warms its fresh process up for 1 s, the same at every depth. The model (svc-70b, configured by \`MODELS\`) has an 8,192-token window.

### The mix: new and continuing contexts, against Portkey

${mixUsers} users, each with an API key (\`Authorization: Bearer sk_…\`); every other request opens a new context, the others continue the user's one context (${mixTurns * 2} messages at the start, growing through the run). Portkey relays a one-message completion to the same upstream.

${runTable(mix)}

- Throughput app / Portkey, median of ${repeats} pairs (range): **${ratioText(mix.ratio)}** (target ≥ 1.0×): ${mix.ratio.median >= 1 ? "met" : "NOT met"}.
- CPU per request, median: Portkey **${median(mix.runs.map((r) => r.a.cpuUsPerRequest)).toFixed(0)} µs**, app **${median(mix.runs.map((r) => r.b.cpuUsPerRequest)).toFixed(0)} µs**; Portkey / app ${ratioText(mix.cpuRatio)}.
- Written per message by the app's process (wchar from /proc: the database's write-ahead log and its checkpoints; the app logs only errors), median: **${kib(median(mix.runs.map((r) => r.b.writtenBytesPerRequest)))}**.
- Upstream calls per message with an API key, new contexts and continued ones (20 messages, one at a time): **${(upstreamCalls / probes.length).toFixed(2)}** (target 1: no title request).
- Database round trips per message, counted at the driver one message at a time: **${maxBefore} before the model call, ${maxAfter} after** (targets: 1 and 1).
- Errors and non-2xx: ${errors} (target 0).

### The depth sweep: one message at 10, 100 and 1,000 messages of history

${sweepContexts} contexts per depth, each request following the reply at that depth (\`parentId\`), so every message of a run has exactly that much history above it. Questions of 200 characters, answers of about 1,200: the history that fits the window is about 13 exchanges, so depth 100 and 1,000 send the model the same amount, and depth 10 all of its history.

${sweepTable}

- CPU per message at depth 1,000 / depth 10, median of ${repeats} rounds (range): **${ratioText(deepRatio)}** (target ≤ 1.5×): ${deepRatio.median <= 1.5 ? "met" : "NOT met"}.

CPU profile of the app's main thread (its event loop; the database thread, not sampled, runs SQLite: its share is the process's CPU less the main thread's) over one more ${seconds} s run of the mix (self time by package, native frames counted for their caller, scaled to that thread's CPU time over that run, µs per message; the profiler adds some overhead):

${profileTable(byPackage)}`;
console.log(`\n## Chat\n\n${body}\n`);
writeSection("Chat", body);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
