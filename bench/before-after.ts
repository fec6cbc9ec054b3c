// The Node server as it ships now against the same server at an earlier commit (default
// d29058c, the last before the code stopped reaching into its dependencies), both run as a
// user runs them: the earlier one from its sources through tsx (as its `npm start` did), this
// one from the JavaScript `npm start` builds. Each is a black box in its own process, on a
// fresh database per run, trusting the same ES256 key, over the same loopback model upstream
// (a third process); autocannon loads them in turn from a fourth (A, B, A, B, …).
//   plants: GET /plants?limit=20, 100 users with 20 plants each, one token per user.
//   chat:   POST /chat/send into a context of each of 100 users (one exchange already in it).
//   mix:    the chat mix as issue 25 measured it, Portkey's gateway beside both commits in
//           each round: 50 users with an API key each, every other message opening a new
//           context and the others continuing the user's one (10 messages at the start),
//           each side warmed up for 5 s on a fresh database seeded through its own API.
// Target: each within 10% of the earlier commit (ratio ≥ 0.9×).
//   npm run bench -- before-after            BENCH_BEFORE_REF=<commit> to compare another;
//   BENCH_AFTER_REF=<commit> puts that commit (run from its sources) in this checkout's place,
//   BENCH_ONLY=plants, chat or mix runs one of the three.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { exportSPKI } from "jose";
import { BENCH_AUDIENCE, BENCH_ISSUER, benchKeyPair, benchToken, compare, machine, MIX_QUESTION, median, portkeySide, ratioText, runSide, runTable, spawnServer, writeSection, type Run, type Served, type Side } from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const users = 100;
const root = resolve(import.meta.dirname, "..");
const only = process.env.BENCH_ONLY;
const short = (ref: string) => execFileSync("git", ["rev-parse", "--short", ref], { cwd: root, encoding: "utf8" }).trim();

/** A commit's files (git archive: no worktree, nothing shared with this checkout) and its own dependencies, kept between runs. */
function checkout(ref: string): string {
  const sha = short(ref);
  const dir = join(tmpdir(), `plant-chat-before-${sha}`);
  if (!existsSync(join(dir, "node_modules"))) {
    rmSync(dir, { recursive: true, force: true });
    execFileSync("sh", ["-c", `mkdir -p ${dir} && git archive ${sha} | tar -x -C ${dir}`], { cwd: root, stdio: "inherit" });
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
  }
  return dir;
}
const sha = short(process.env.BENCH_BEFORE_REF ?? "d29058c");
const before = checkout(sha);
const afterRef = process.env.BENCH_AFTER_REF;
const afterName = afterRef ? short(afterRef) : "this checkout";
const after = afterRef ? checkout(afterRef) : root;
// This checkout as `npm start` runs it.
if (!afterRef) execFileSync(process.execPath, [join(root, "scripts/build-server.mjs"), "--if-needed"], { cwd: root, stdio: "inherit" });

const upstreamModule = resolve(import.meta.dirname, "../test/support/fake-upstream.ts");
const upstream = await spawnServer(
  ["--import", "tsx", "--input-type=module", "-e", `import { startFakeUpstream } from ${JSON.stringify(upstreamModule)};
     const u = await startFakeUpstream({ record: false });
     console.log("UPSTREAM " + u.baseUrl);`],
  {},
  /UPSTREAM (\S+)/,
);

const publicKey = await exportSPKI((await benchKeyPair()).publicKey);
const tokens = await Promise.all(Array.from({ length: users }, (_, i) => benchToken(`user:bench-${i}`)));
const scratch = mkdtempSync(join(tmpdir(), "bench-before-after-"));
let databases = 0;

/** A fresh server of one side, on a fresh database, seeded through its own API. */
async function start(side: "before" | "after", seed: (url: string) => Promise<void>): Promise<Served> {
  const args = side === "after" && !afterRef ? ["dist/server.js"] : ["--import", "tsx", "src/server.ts"];
  const dir = join(scratch, `db-${databases++}`);
  const server = await spawnServer(
    args,
    {
      PORT: "0",
      HOST: "127.0.0.1",
      NODE_ENV: "production",
      PUBLIC_BASE_URL: "http://127.0.0.1",
      DATABASE_URL: `file:${join(dir, "bench.db")}`,
      WEB_DIST_DIR: join(dir, "no-web-client"),
      AUTH_PUBLIC_KEY: publicKey,
      AUTH_ISSUER: BENCH_ISSUER,
      AUTH_AUDIENCE: BENCH_AUDIENCE,
      SVC_MODEL_BASE_URL: upstream.url,
      DAILY_CREDITS: "1000000000",
      RATE_LIMIT_PER_MINUTE: "0",
      // "listening" is the line waited for; nothing else logs at info per request.
      LOG_LEVEL: "info",
    },
    /"url":"http:\/\/localhost:(\d+)"/,
    { cwd: side === "before" ? before : after },
  );
  server.url = `http://127.0.0.1:${server.url}`;
  await seed(server.url);
  return server;
}

async function post(url: string, token: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`seeding: ${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

const seedPlants = async (url: string) => {
  for (const [u, token] of tokens.entries()) {
    await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${url}/plants`, token, { id: u * 100 + i, name: `plant ${i}`, tag: "bench" })));
  }
};

// Each user's context, made by a first message; the bodies of a run follow up in it.
const contexts = new Map<string, string[]>();
const seedChat = async (url: string) => {
  const ids = await Promise.all(tokens.map(async (token) => (await post(`${url}/chat/send`, token, { message: "Which plants like shade?" })).contextId as string));
  contexts.set(url, ids);
};

const plantsSide = (side: "before" | "after"): Side => ({
  label: `${side}: GET /plants?limit=20`,
  start: () => start(side, seedPlants),
  spec: (server) => ({ url: `${server.url}/plants?limit=20`, seconds, tokens }),
});
const chatSide = (side: "before" | "after"): Side => ({
  label: `${side}: POST /chat/send`,
  start: () => start(side, seedChat),
  spec: (server) => ({
    url: `${server.url}/chat/send`,
    method: "POST",
    seconds,
    headers: { "content-type": "application/json" },
    tokens,
    bodies: contexts.get(server.url)!.map((contextId) => JSON.stringify({ message: "And which need full sun?", contextId })),
  }),
});

// The mix (as bench/chat.ts runs it, on a database seeded through each side's own API):
// each user's API key and one context of five exchanges.
const mixUsers = 50;
const mixJwts = tokens.slice(0, mixUsers);
const mixLoads = new Map<string, { tokens: string[]; bodies: string[] }>();
const seedMix = async (url: string) => {
  // Two requests a user (a new context, the user's context continued), each with its key.
  const keys: string[] = [];
  const bodies: string[] = [];
  await Promise.all(
    mixJwts.map(async (jwt) => {
      const { key } = (await post(`${url}/keys`, jwt, { name: "bench" })) as { key: string };
      let contextId: string | undefined;
      for (let t = 0; t < 5; t++) {
        const sent = await post(`${url}/chat/send`, key, { message: `How often should I water plant ${t}`, ...(contextId ? { contextId } : {}) });
        contextId = sent.contextId as string;
      }
      keys.push(key, key);
      bodies.push(JSON.stringify({ message: MIX_QUESTION }), JSON.stringify({ message: "And in winter, how often should I water a monstera?", contextId }));
    }),
  );
  mixLoads.set(url, { tokens: keys, bodies });
};
const MIX_WARMUP_SECONDS = 5;
const mixSide = (side: "before" | "after"): Side => ({
  label: `${side}: POST /chat/send, the mix`,
  start: () => start(side, seedMix),
  warmupSeconds: MIX_WARMUP_SECONDS,
  spec: (server) => ({ url: `${server.url}/chat/send`, method: "POST", seconds, headers: { "content-type": "application/json" }, ...mixLoads.get(server.url)! }),
});

/** Portkey, then the earlier commit, then this one, `repeats` times. */
async function mixRounds() {
  const portkey = portkeySide("relay: Portkey AI gateway → upstream", upstream.url, { seconds, warmupSeconds: MIX_WARMUP_SECONDS });
  const rounds: Array<{ portkey: Run; before: Run; after: Run }> = [];
  for (let i = 0; i < repeats; i++) {
    const round = { portkey: await runSide(portkey), before: await runSide(mixSide("before")), after: await runSide(mixSide("after")) };
    console.log(
      `  ${i + 1}/${repeats}: ${(["portkey", "before", "after"] as const).map((k) => `${k} ${round[k].rps} req/s, ${round[k].cpuUsPerRequest.toFixed(0)} µs, ${(round[k].writtenBytesPerRequest / 1024).toFixed(1)} KiB written`).join("; ")}`,
    );
    rounds.push(round);
  }
  const ratio = (of: (r: (typeof rounds)[number]) => number) => {
    const values = rounds.map(of).sort((x, y) => x - y);
    return { median: values[Math.floor(values.length / 2)]!, min: values[0]!, max: values[values.length - 1]! };
  };
  return {
    rounds,
    beforeVsPortkey: ratio((r) => r.before.rps / r.portkey.rps),
    afterVsPortkey: ratio((r) => r.after.rps / r.portkey.rps),
    afterVsBefore: ratio((r) => r.after.rps / r.before.rps),
  };
}

const startedAt = machine();
console.log(`plants (${sha} → ${afterName})`);
const plants = only && only !== "plants" ? null : await compare(plantsSide("before"), plantsSide("after"), repeats);
console.log(`chat (${sha} → ${afterName})`);
const chat = only && only !== "chat" ? null : await compare(chatSide("before"), chatSide("after"), repeats);
console.log(`chat mix, Portkey beside both (${sha} → ${afterName})`);
const mix = only && only !== "mix" ? null : await mixRounds();
upstream.stop();
rmSync(scratch, { recursive: true, force: true });
for (const [name, c] of [["plants", plants], ["chat", chat]] as const) {
  if (c) console.log(`${name}: after / before ${ratioText(c.ratio)}; CPU per request before / after ${ratioText(c.cpuRatio)}`);
}
if (mix) console.log(`mix: before / Portkey ${ratioText(mix.beforeVsPortkey)}; after / Portkey ${ratioText(mix.afterVsPortkey)}; after / before ${ratioText(mix.afterVsBefore)}`);
// A partial or another commit's run is printed, not written down.
if (!plants || !chat || !mix || afterRef) process.exit(0);

const cpu = (c: NonNullable<typeof plants>, side: "a" | "b") => {
  const values = c.runs.map((r) => r[side].cpuUsPerRequest).sort((x, y) => x - y);
  return values[Math.floor(values.length / 2)]!.toFixed(0);
};
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
function mixTable(m: NonNullable<typeof mix>): string {
  const lines = ["| round | side | req/s | CPU µs/req | of which main thread | KiB written/req | p50 ms | p99 ms | non-2xx |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"];
  m.rounds.forEach((round, i) => {
    for (const [side, r] of [["Portkey", round.portkey], [sha, round.before], ["this checkout", round.after]] as const) {
      lines.push(`| ${i + 1} | ${side} | ${r.rps} | ${r.cpuUsPerRequest.toFixed(0)} | ${r.mainThreadUsPerRequest.toFixed(0)} | ${(r.writtenBytesPerRequest / 1024).toFixed(1)} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} |`);
    }
  });
  return lines.join("\n");
}
const verdict = (r: { median: number }) => (r.median >= 0.9 ? "met" : "NOT met");
writeSection(
  "Before and after: the Node server at an earlier commit and now",
  `${startedAt}. Before: commit ${sha} from its sources through tsx, as its \`npm start\` ran it; after: this checkout's \`dist/server.js\`, as \`npm start\` runs it. Each run starts a fresh server process on a fresh database, seeded through its API, warms it for a second and loads it for ${seconds} s with 16 connections; the model upstream and autocannon run in processes of their own.

### GET /plants?limit=20 (100 users, 20 plants each)

${runTable(plants)}

- Throughput after / before, median of ${repeats} pairs (range): **${ratioText(plants.ratio)}** (target ≥ 0.9×): ${verdict(plants.ratio)}.
- CPU per request (all threads), median: before **${cpu(plants, "a")} µs**, after **${cpu(plants, "b")} µs**.

### POST /chat/send (100 users, into a context each)

${runTable(chat)}

- Throughput after / before, median of ${repeats} pairs (range): **${ratioText(chat.ratio)}** (target ≥ 0.9×): ${verdict(chat.ratio)}.
- CPU per request (all threads), median: before **${cpu(chat, "a")} µs**, after **${cpu(chat, "b")} µs**.

### The chat mix, with Portkey beside both

${mixUsers} users, each with an API key; every other message opens a new context, the others continue the user's one context (10 messages at the start, growing through the run), as in the Chat section, but on a database holding only the mix's users (seeded through each side's own API) and with the catalog each commit builds from \`SVC_MODEL_BASE_URL\`. Portkey relays a one-message completion to the same upstream. Each round runs Portkey, then ${sha}, then this checkout, each a fresh process warmed up for ${MIX_WARMUP_SECONDS} s.

${mixTable(mix)}

- Throughput against Portkey's, median of ${repeats} rounds (range): ${sha} **${ratioText(mix.beforeVsPortkey)}**, this checkout **${ratioText(mix.afterVsPortkey)}** (target ≥ 1.0×): ${mix.afterVsPortkey.median >= 1 ? "met" : "NOT met"}.
- This checkout against ${sha}: **${ratioText(mix.afterVsBefore)}** (target ≥ 0.9×): ${verdict(mix.afterVsBefore)}.
- CPU per message (all threads), median: Portkey **${median(mix.rounds.map((r) => r.portkey.cpuUsPerRequest)).toFixed(0)} µs**, ${sha} **${median(mix.rounds.map((r) => r.before.cpuUsPerRequest)).toFixed(0)} µs**, this checkout **${median(mix.rounds.map((r) => r.after.cpuUsPerRequest)).toFixed(0)} µs**.
- Written per message (wchar from /proc: the database's write-ahead log and its checkpoints), median: ${sha} **${kib(median(mix.rounds.map((r) => r.before.writtenBytesPerRequest)))}**, this checkout **${kib(median(mix.rounds.map((r) => r.after.writtenBytesPerRequest)))}**.`,
);
process.exit(0);
