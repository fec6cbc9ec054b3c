// POST /chat/send through the whole app (JWT auth; one batch before the model call: user,
// debit, preferences; the model call; one batch after: context, both messages, usage)
// against the same loopback upstream called directly (the floor) and through Portkey's
// open-source AI gateway (@portkey-ai/gateway), a relay that only forwards. Same run, same
// upstream, no think time. Targets: < 2 round trips before the model call and 1 after;
// chat throughput >= 3x the relay's.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { createApp } from "../src/app";
import { openDatabase } from "../src/open-database";
import { startFakeUpstream } from "../test/support/fake-upstream";
import { benchRuntime, benchToken, countRoundTrips, load, machine, table, writeSection, type LoadResult } from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const connections = 16;
const children: ChildProcess[] = [];

/** Starts a server in its own process (its own core, as in production) and waits for its URL. */
function child(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ url: string; proc: ChildProcess }> {
  return new Promise((resolvePromise, reject) => {
    const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    children.push(proc);
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no ready line from ${args[0]}: ${out.slice(-300)}`)), 20_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (match) {
        clearTimeout(timer);
        resolvePromise({ url: match[1] ?? match[0], proc });
      }
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`${args[0]} exited with ${code}: ${out.slice(-300)}`)));
  });
}

/** CPU time (ms) a process has used: this one from process.cpuUsage, a child's from /proc. */
function cpuMs(proc?: ChildProcess): number {
  if (!proc) {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  }
  const fields = readFileSync(`/proc/${proc.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
}

type Row = LoadResult & { cpuPerRequest: number };

/** A load run, with the CPU that the serving process spent per request. */
async function measured(label: string, url: string, options: Parameters<typeof load>[2], server?: ChildProcess): Promise<Row> {
  const before = cpuMs(server);
  const result = await load(label, url, options);
  return { ...result, cpuPerRequest: (cpuMs(server) - before) / Math.max(1, result.requests) };
}

const upstreamModule = resolve(import.meta.dirname, "../test/support/fake-upstream.ts");
const upstream = await child(
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
let portkey: { url: string; proc: ChildProcess } | undefined;
let portkeyProblem: string | undefined;
try {
  const started = await child([portkeyEntry, `--port=${portkeyPort}`, "--headless"], { NODE_ENV: "production" }, /Ready for connections/);
  portkey = { url: `http://127.0.0.1:${portkeyPort}`, proc: started.proc };
} catch (err) {
  portkeyProblem = err instanceof Error ? err.message.split("\n")[0] : String(err);
}

// For reference: the least a relay can do, a node:http server that forwards with fetch.
const minimalRelay = await child(
  [
    "--input-type=module",
    "-e",
    `import { createServer } from "node:http";
     const upstream = ${JSON.stringify(upstream.url)};
     const server = createServer((req, res) => {
       const chunks = [];
       req.on("data", (c) => chunks.push(c));
       req.on("end", async () => {
         const r = await fetch(upstream + "/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: Buffer.concat(chunks) });
         res.writeHead(r.status, { "content-type": "application/json" }).end(Buffer.from(await r.arrayBuffer()));
       });
     });
     server.listen(0, "127.0.0.1", () => console.log("RELAY http://127.0.0.1:" + server.address().port));`,
  ],
  {},
  /RELAY (\S+)/,
);

// The app, in this process, over a libSQL file, as the Node server runs it.
const dir = mkdtempSync(join(tmpdir(), "bench-chat-"));
const { client, db } = await openDatabase(`file:${join(dir, "bench.db")}`);
const trips = countRoundTrips(client);
const token = await benchToken("user:bench-chat");
const runtimeFor = (baseUrl: string) => benchRuntime({ SVC_MODEL_BASE_URL: baseUrl, DAILY_CREDITS: "1000000000" });
const runtime = await runtimeFor(upstream.url);
const app = createApp(() => ({ ...runtime, db }));
const server = await new Promise<ServerType>((done) => {
  const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => done(s));
});
const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const completion = JSON.stringify({ model: "llama-3.3-70b", messages: [{ role: "user", content: "How often should I water a monstera?" }] });
const chat = JSON.stringify({ message: "How often should I water a monstera?" });
const json = { "content-type": "application/json" };
const portkeyHeaders = { ...json, "x-portkey-provider": "openai", "x-portkey-custom-host": upstream.url, authorization: "Bearer sk-bench" };
const appHeaders = { ...json, authorization: `Bearer ${token}` };

// Warm up each path (JIT, connection pools, the user's first-sight row).
const warm = async (url: string, headers: Record<string, string>, body: string) => {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(url, { method: "POST", headers, body });
    if (!res.ok) throw new Error(`${url} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    await res.arrayBuffer();
  }
};
await warm(`${upstream.url}/chat/completions`, json, completion);
await warm(`${minimalRelay.url}/v1/chat/completions`, json, completion);
await warm(`${appUrl}/chat/send`, appHeaders, chat);
if (portkey) {
  try {
    await warm(`${portkey.url}/v1/chat/completions`, portkeyHeaders, completion);
  } catch (err) {
    portkeyProblem = err instanceof Error ? err.message : String(err);
    portkey = undefined;
  }
}

const post = (headers: Record<string, string>, body: string) => ({ seconds, connections, method: "POST", headers, body });
const rows: Row[] = [];
const floor = await measured("floor: the loopback upstream alone", `${upstream.url}/chat/completions`, post(json, completion), upstream.proc);
rows.push(floor);
const relay = portkey
  ? await measured("relay: Portkey AI gateway 1.15 (@portkey-ai/gateway) → upstream", `${portkey.url}/v1/chat/completions`, post(portkeyHeaders, completion), portkey.proc)
  : undefined;
if (relay) rows.push(relay);
rows.push(
  await measured(
    "reference: minimal relay (node:http + fetch, no gateway features) → upstream",
    `${minimalRelay.url}/v1/chat/completions`,
    post(json, completion),
    minimalRelay.proc,
  ),
);
const tripsBefore = trips();
const chatRun = await measured("app: POST /chat/send (JWT, new context each) → upstream", `${appUrl}/chat/send`, post(appHeaders, chat));
rows.push(chatRun);
// Requests still in flight when autocannon stopped settle before the count is read.
await new Promise((r) => setTimeout(r, 500));
const tripsPerMessage = (trips() - tripsBefore) / chatRun.requests;

// Round trips before and after the model call, one message at a time: an in-process
// upstream notes the driver's count when the call reaches it.
const probeUpstream = await startFakeUpstream({ record: false });
const probeRuntime = await runtimeFor(probeUpstream.baseUrl);
const probeApp = createApp(() => ({ ...probeRuntime, db }));
const probes: Array<{ before: number; after: number }> = [];
let contextId: string | undefined;
for (let i = 0; i < 20; i++) {
  const start = trips();
  let before = -1;
  probeUpstream.onRequest = () => (before = trips() - start);
  const res = await probeApp.request("/chat/send", {
    method: "POST",
    headers: appHeaders,
    body: JSON.stringify({ message: `probe ${i}`, ...(contextId ? { contextId } : {}) }),
  });
  contextId = ((await res.json()) as { contextId: string }).contextId;
  probes.push({ before, after: trips() - start - before });
}
await probeUpstream.close();
const maxBefore = Math.max(...probes.map((p) => p.before));
const maxAfter = Math.max(...probes.map((p) => p.after));

const ratioToRelay = relay ? chatRun.rps / relay.rps : undefined;
const cpuRatio = relay ? relay.cpuPerRequest / chatRun.cpuPerRequest : undefined;
const lines = [
  `${machine()}; ${seconds} s per run, ${connections} connections, no think time. autocannon, the upstream, Portkey and the minimal relay each run in their own process; the app runs in the benchmark's process over a libSQL file (WAL). "CPU ms/req" is the serving process's CPU time per request.`,
  "",
  table(rows),
  "",
  "| run | CPU ms/req |",
  "|---|---:|",
  ...rows.map((r) => `| ${r.label} | ${r.cpuPerRequest.toFixed(2)} |`),
  "",
  `- Database round trips per message, counted at the driver one message at a time (JWT, existing context): **${maxBefore} before the model call, ${maxAfter} after** (targets: < 2 and 1). An API key adds its lookup before the batch: 2.`,
  `- Round trips per message under load: **${tripsPerMessage.toFixed(3)}** (2 expected; the excess is requests cut off when the load stopped).`,
  ratioToRelay === undefined
    ? `- Relay: Portkey's gateway could not run here (${portkeyProblem}); see the minimal relay.`
    : `- Throughput app / Portkey relay: **${ratioToRelay.toFixed(2)}×** (target ≥ 3×): ${ratioToRelay >= 3 ? "met" : "not met"}. CPU per request, Portkey / app: **${cpuRatio!.toFixed(2)}×**.`,
  `- Errors: ${rows.reduce((n, r) => n + r.errors, 0)}; non-2xx: ${rows.reduce((n, r) => n + r.non2xx, 0)}.`,
];
const body = lines.join("\n");
console.log(`\n## Chat\n\n${body}\n`);
writeSection("Chat", body);

server.close();
client.close();
for (const c of children) c.kill();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
