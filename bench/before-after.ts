// The Node server as it ships now against the same server at an earlier commit (default
// d29058c, the last before the code stopped reaching into its dependencies), both run as a
// user runs them: the earlier one from its sources through tsx (as its `npm start` did), this
// one from the JavaScript `npm start` builds. Each is a black box in its own process, on a
// fresh database per run, trusting the same ES256 key, over the same loopback model upstream
// (a third process); autocannon loads them in turn from a fourth (A, B, A, B, …).
//   plants: GET /plants?limit=20, 100 users with 20 plants each, one token per user.
//   chat:   POST /chat/send into a context of each of 100 users (one exchange already in it).
// Target: each within 10% of the earlier commit (ratio ≥ 0.9×).
//   npm run bench -- before-after            BENCH_BEFORE_REF=<commit> to compare another;
//   BENCH_AFTER_REF=<commit> puts that commit (run from its sources) in this checkout's place,
//   BENCH_ONLY=plants or chat runs one of the two.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { exportSPKI } from "jose";
import { BENCH_AUDIENCE, BENCH_ISSUER, benchKeyPair, benchToken, compare, machine, ratioText, runTable, spawnServer, writeSection, type Served, type Side } from "./support";

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

const startedAt = machine();
console.log(`plants (${sha} → ${afterName})`);
const plants = only === "chat" ? null : await compare(plantsSide("before"), plantsSide("after"), repeats);
console.log(`chat (${sha} → ${afterName})`);
const chat = only === "plants" ? null : await compare(chatSide("before"), chatSide("after"), repeats);
upstream.stop();
rmSync(scratch, { recursive: true, force: true });
for (const [name, c] of [["plants", plants], ["chat", chat]] as const) {
  if (c) console.log(`${name}: after / before ${ratioText(c.ratio)}; CPU per request before / after ${ratioText(c.cpuRatio)}`);
}
// A partial or another commit's run is printed, not written down.
if (!plants || !chat || afterRef) process.exit(0);

const cpu = (c: NonNullable<typeof plants>, side: "a" | "b") => {
  const values = c.runs.map((r) => r[side].cpuUsPerRequest).sort((x, y) => x - y);
  return values[Math.floor(values.length / 2)]!.toFixed(0);
};
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
- CPU per request (all threads), median: before **${cpu(chat, "a")} µs**, after **${cpu(chat, "b")} µs**.`,
);
process.exit(0);
