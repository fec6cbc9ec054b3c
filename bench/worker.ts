// The Worker in workerd: GET /plants?limit=20 with a JWT through the deployed bundle (built
// as `wrangler deploy` builds it) against a bare Worker running the same D1 query without
// auth. Each runs in its own workerd process, started by miniflare (the library wrangler
// uses) and loaded on a direct socket, with no proxy in between; autocannon runs in a third
// process, the two in turn (A, B, A, B, …). 1,000 users with their own tokens, the request
// limit at its default. Target: app ≥ 0.8× the bare Worker.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Miniflare } from "miniflare";
import { userIdFor } from "../src/platform/auth/identity";
import { BENCH_AUDIENCE, BENCH_ISSUER, PLANT_PAGE, benchJwk, benchToken, compare, load, machine, median, ratioText, runTable, writeSection, writtenBytesOf, type Served } from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const users = 1000;
const root = resolve(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "bench-worker-"));

// The bundle exactly as `wrangler deploy` would upload it.
execFileSync(process.execPath, [join(root, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", dir], {
  cwd: root,
  stdio: "ignore",
});
const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
const compatibilityDate = /compatibility_date = "([^"]+)"/.exec(wrangler)![1]!;

// The same statement the app sends (PLANT_PAGE), for the same users in turn.
const bare = (owners: string[]) => `const owners = ${JSON.stringify(owners)};
const PLANT_PAGE = ${JSON.stringify(PLANT_PAGE)};
let next = 0;
export default {
  async fetch(request, env) {
    const owner = owners[next++ % owners.length];
    const [[json]] = await env.DB.prepare(PLANT_PAGE).bind(owner, owner, 20).raw();
    return new Response(json, { headers: { "content-type": "application/json" } });
  },
};`;

const tokens: string[] = [];
for (let i = 0; i < users; i++) tokens.push(await benchToken(`user:bench-${i}`));
const owners = await Promise.all(tokens.map((_, i) => userIdFor(BENCH_ISSUER, `user:bench-${i}`)));

/** The migrations, as drizzle-kit wrote them, split into statements. */
const migrations = readdirSync(join(root, "migrations"))
  .filter((f) => f.endsWith(".sql"))
  .sort()
  .flatMap((f) => readFileSync(join(root, "migrations", f), "utf8").split("--> statement-breakpoint"))
  .map((s) => s.trim())
  .filter(Boolean);

const workerdPids = () =>
  new Set(
    readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          const stat = readFileSync(`/proc/${p}/stat`, "utf8");
          return stat.includes("(workerd)") && stat.split(") ")[1]!.split(" ")[1] === String(process.pid);
        } catch {
          return false;
        }
      })
      .map(Number),
  );

/** A Worker in its own workerd process over a migrated, seeded in-memory D1. */
async function startWorker(options: { script?: string; scriptPath?: string; bindings: Record<string, string> }): Promise<Served & { mf: Miniflare }> {
  const before = workerdPids();
  const mf = new Miniflare({
    modules: true,
    ...(options.script ? { script: options.script } : { scriptPath: options.scriptPath!, modulesRoot: dir }),
    compatibilityDate,
    compatibilityFlags: ["nodejs_compat"],
    d1Databases: { DB: "bench" },
    bindings: options.bindings,
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
  });
  await mf.ready;
  const url = (await mf.unsafeGetDirectURL()).toString().replace(/\/$/, "");
  const pid = [...workerdPids()].find((p) => !before.has(p));
  if (!pid) throw new Error("could not find the workerd process miniflare started");
  const db = await mf.getD1Database("DB");
  for (const sql of migrations) await db.prepare(sql).run();
  // 21 plants for each user: a page of 20 and a Link to the next. Literal rows, many to a
  // statement (a D1 statement takes at most 100 bound values); the ids are hex digests.
  const now = Date.now();
  const rows = <T>(items: T[], size: number) => Array.from({ length: Math.ceil(items.length / size) }, (_, k) => items.slice(k * size, (k + 1) * size));
  for (const chunk of rows(owners.map((owner, i) => `('${owner}', '${BENCH_ISSUER}', 'user:bench-${i}', 'bench', ${now})`), 300)) {
    await db.prepare(`insert into users (id, issuer, subject, name, created_at) values ${chunk.join(", ")}`).run();
  }
  const plants = owners.flatMap((owner) => Array.from({ length: 21 }, (_, k) => `('${owner}', ${k + 1}, 'plant ${k + 1}', ${k % 2 ? "null" : "'odd'"})`));
  for (const chunk of rows(plants, 500)) await db.prepare(`insert into plants (owner_id, id, name, tag) values ${chunk.join(", ")}`).run();
  const tick = 10_000;
  const cpuUs = (stat = `/proc/${pid}/stat`) => {
    const f = readFileSync(stat, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) * tick;
  };
  return {
    mf,
    url,
    proc: undefined as never,
    cpuUs: () => cpuUs(),
    mainThreadCpuUs: () => cpuUs(`/proc/${pid}/task/${pid}/stat`),
    writtenBytes: () => writtenBytesOf(pid),
    profile: () => Promise.reject(new Error("no profiles of workerd here")),
    stop: () => void mf.dispose(),
  };
}

const app = await startWorker({
  scriptPath: join(dir, "worker.js"),
  bindings: { AUTH_PUBLIC_KEY: await benchJwk(), AUTH_ISSUER: BENCH_ISSUER, AUTH_AUDIENCE: BENCH_AUDIENCE, LOG_LEVEL: "error" },
});
const floor = await startWorker({ script: bare(owners), bindings: {} });
const appSpec = { url: `${app.url}/plants?limit=20`, seconds, tokens };
const floorSpec = { url: `${floor.url}/plants?limit=20`, seconds };
for (const [url, headers] of [[appSpec.url, { authorization: `Bearer ${tokens[0]}` }], [floorSpec.url, {}]] as const) {
  const res = await fetch(url, { headers });
  if (res.status !== 200 || ((await res.json()) as unknown[]).length !== 20) throw new Error(`${url} answered ${res.status}`);
}

await load("warmup", { ...floorSpec, seconds: 2 });
await load("warmup", { ...appSpec, seconds: 3 });
console.log("worker: bare Worker vs app, interleaved");
const result = await compare(
  { label: "floor: bare Worker, same D1 query and users, no auth", server: floor, spec: floorSpec },
  { label: "app: the Worker bundle, GET /plants?limit=20 with a JWT (ES256), 1,000 users", server: app, spec: appSpec },
  repeats,
);
await app.mf.dispose();
await floor.mf.dispose();

const bundle = readFileSync(join(dir, "worker.js"));
const { gzipSync } = await import("node:zlib");
const gzipped = gzipSync(bundle, { level: 9 }).length;
const errors = result.runs.reduce((n, r) => n + r.b.errors + r.b.non2xx, 0);
const body = `${machine()}; ${repeats} pairs of ${seconds} s runs, interleaved, 16 connections. Each Worker runs in its own workerd process (miniflare, in-memory D1), loaded on a direct socket; autocannon in another process; CPU µs/req is the workerd process's (utime + stime from /proc).

${runTable(result)}

- Throughput app / bare Worker, median of ${repeats} pairs (range): **${ratioText(result.ratio)}** (target ≥ 0.8×): ${result.ratio.median >= 0.8 ? "met" : "NOT met"}.
- CPU per request, median: bare **${median(result.runs.map((r) => r.a.cpuUsPerRequest)).toFixed(0)} µs**, app **${median(result.runs.map((r) => r.b.cpuUsPerRequest)).toFixed(0)} µs**.
- Errors and non-2xx: ${errors} (target 0).
- The bundle's entry module (\`wrangler deploy --dry-run\`; pdf.js is a module of its own beside it, loaded by the first PDF): **${(bundle.length / 1024).toFixed(0)} KiB**, **${(gzipped / 1024).toFixed(0)} KiB gzipped** (budget 263 KiB, see "Worker bundle: pdf.js on its own").`;
console.log(`\n## Worker\n\n${body}\n`);
writeSection("Worker", body);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
