import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { parseConfig } from "../src/platform/config";
import { createRuntime, type Runtime } from "../src/platform/deps";
import { createLogger } from "../src/platform/log";

export interface LoadResult {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
}

/** A load run against a server in its own process, with that process's CPU per request. */
export interface Run extends LoadResult {
  cpuUsPerRequest: number;
  /** The part of it spent on the process's main thread, the one running its event loop. */
  mainThreadUsPerRequest: number;
  /** Bytes the process handed to write(2) and its kin per request (wchar from /proc): for a database, its write-ahead log and checkpoints. */
  writtenBytesPerRequest: number;
}

export interface LoadSpec {
  url: string;
  seconds?: number;
  connections?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Access tokens, one per user; each request takes the next. */
  tokens?: string[];
  /** Request bodies, one per token. */
  bodies?: string[];
}

const LOAD = resolve(import.meta.dirname, "child/load.ts");
const SERVE = resolve(import.meta.dirname, "child/serve.ts");
const scratch = mkdtempSync(join(tmpdir(), "bench-"));
let specs = 0;

/** Loads a server with autocannon in a child process (bench/child/load.ts). */
export async function load(label: string, spec: LoadSpec): Promise<LoadResult> {
  const file = join(scratch, `load-${specs++}.json`);
  writeFileSync(file, JSON.stringify({ seconds: 5, connections: 16, ...spec }));
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", LOAD, file], { maxBuffer: 64 << 20 });
  const r = JSON.parse(stdout);
  return {
    label,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

/** A server under test in its own process. */
export interface Served {
  url: string;
  proc: ChildProcess;
  /** CPU time (µs) the process has used so far: utime + stime from /proc. */
  cpuUs(): number;
  /** The same, for its main thread alone. */
  mainThreadCpuUs(): number;
  /** Bytes it has handed to write(2) and its kin so far (wchar from /proc). */
  writtenBytes(): number;
  /** A CPU profile of the process's main thread while `during` runs, and the CPU µs that thread used meanwhile. */
  profile<T>(during: () => Promise<T>): Promise<{ result: T; profile: CpuProfile; cpuUs: number }>;
  stop(): void;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of running) p.kill();
});

/** Starts a process and waits for the line `ready` matches; its first group is the URL. */
export function spawnServer(args: string[], env: Record<string, string>, ready: RegExp, options: { cwd?: string } = {}): Promise<Served> {
  return new Promise((done, reject) => {
    const proc = spawn(process.execPath, args, { cwd: options.cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe", "ipc"] });
    running.add(proc);
    proc.on("exit", () => running.delete(proc));
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no ready line from ${args.join(" ")}: ${out.slice(-500)}`)), 60_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (!match) return;
      clearTimeout(timer);
      proc.stdout!.off("data", onData);
      proc.stderr!.off("data", onData);
      proc.stdout!.resume();
      proc.stderr!.resume();
      done({
        url: match[1] ?? match[0],
        proc,
        cpuUs: () => cpuUsOf(proc.pid!),
        mainThreadCpuUs: () => cpuUsOf(proc.pid!, proc.pid!),
        writtenBytes: () => writtenBytesOf(proc.pid!),
        profile: (during) => profileOf(proc, during),
        stop: () => proc.kill("SIGTERM"),
      });
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}: ${out.slice(-500)}`)));
  });
}

/** One of bench/child/serve.ts's servers (`app`, `plants-floor`) in its own process. */
export function serveChild(kind: string, env: Record<string, string>): Promise<Served> {
  return spawnServer(["--import", "tsx", SERVE, kind], env, /READY (\S+)/);
}

const TICK_US = 10_000; // USER_HZ is 100 on Linux

function cpuUsOf(pid: number, thread?: number): number {
  const fields = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** The chat mix's question: a new context's first message, and Portkey's one-message completion. */
export const MIX_QUESTION = "How often should I water a monstera in winter?";

/**
 * Portkey's open-source AI gateway (@portkey-ai/gateway), as its npm package starts it
 * (headless, no UI), in a fresh process: the relay the chat mix is measured against. It
 * stores nothing and relays a one-message completion to `upstream`.
 */
export function portkeySide(label: string, upstream: string, options: { seconds: number; warmupSeconds: number }): Side {
  const entry = join(resolve(createRequire(import.meta.url).resolve("@portkey-ai/gateway/package.json"), ".."), "build/start-server.js");
  return {
    label,
    warmupSeconds: options.warmupSeconds,
    start: async () => {
      const port = 20000 + Math.floor(Math.random() * 20000);
      const served = await spawnServer([entry, `--port=${port}`, "--headless"], { NODE_ENV: "production" }, /Ready for connections/);
      served.url = `http://127.0.0.1:${port}`;
      return served;
    },
    spec: (portkey) => ({
      url: `${portkey.url}/v1/chat/completions`,
      seconds: options.seconds,
      method: "POST",
      headers: { "content-type": "application/json", "x-portkey-provider": "openai", "x-portkey-custom-host": upstream, authorization: "Bearer sk-bench" },
      body: JSON.stringify({ model: "llama-3.3-70b", messages: [{ role: "user", content: MIX_QUESTION }] }),
    }),
  };
}

export function writtenBytesOf(pid: number): number {
  return Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))![1]);
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { url: string; functionName: string }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

function profileOf<T>(proc: ChildProcess, during: () => Promise<T>): Promise<{ result: T; profile: CpuProfile; cpuUs: number }> {
  const reply = (match: (m: unknown) => boolean) =>
    new Promise<unknown>((done) => {
      const on = (m: unknown) => {
        if (!match(m)) return;
        proc.off("message", on);
        done(m);
      };
      proc.on("message", on);
    });
  return (async () => {
    const started = reply((m) => m === "profile-started");
    proc.send("profile-start");
    await started;
    // The profiler samples the main thread (the event loop), so its CPU time is the scale.
    const before = cpuUsOf(proc.pid!, proc.pid!);
    const result = await during();
    await new Promise((r) => setTimeout(r, 200));
    const cpuUs = cpuUsOf(proc.pid!, proc.pid!) - before;
    const stopped = reply((m) => typeof m === "object" && m !== null && "profile" in m);
    proc.send("profile-stop");
    const { profile } = (await stopped) as { profile: CpuProfile };
    return { result, profile, cpuUs };
  })();
}

/**
 * Self time by package, scaled to `cpuUs` (the CPU the profiled thread used over the window, from
 * /proc: sampling counts wall time, which a shared machine inflates). Native frames (V8
 * builtins, bindings) count for the package that called them.
 */
/**
 * The statement the app sends for a page of plants (src/features/plants/plants.ts: the page's JSON
 * array, its last id and whether more follow, in one row), as the floors of the plants and
 * Worker comparisons run it. Arguments: owner, owner, limit.
 */
export const PLANT_PAGE = `select "json", cast("last_id" as text), exists (select 1 from "plants" where "owner_id" = ? and "id" > "last_id")
  from (select json_group_array(case when "tag" is null then json_object('name', "name") else json_object('name', "name", 'tag', "tag") end order by "id") as "json", max("id") as "last_id"
        from (select "id", "name", "tag" from "plants" where "plants"."owner_id" = ? order by "plants"."id" asc limit ?) "page_rows") "page"`;

/** With BENCH_PROFILE_DIR set, keeps a section's raw profile there (`<name>.cpuprofile`, for Chrome's DevTools). */
export function keepProfile(name: string, profile: CpuProfile): void {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (dir) writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
}

export function profileByPackage(profile: CpuProfile, requests: number, cpuUs: number): Array<{ pkg: string; usPerRequest: number; share: number }> {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const pkgOf = new Map<number, string>();
  const resolvePkg = (id: number): string => {
    const known = pkgOf.get(id);
    if (known) return known;
    const { url, functionName } = byId.get(id)!.callFrame;
    let pkg = packageOf(url, functionName);
    if (pkg === "native") {
      const up = parent.get(id);
      pkg = up === undefined ? "native" : resolvePkg(up);
      if (pkg === "(root)") pkg = "native";
    }
    pkgOf.set(id, pkg);
    return pkg;
  };
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const pkg = resolvePkg(id);
    if (pkg === "(idle)") return;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(pkg, (self.get(pkg) ?? 0) + dt);
    total += dt;
  });
  return [...self]
    .map(([pkg, us]) => ({ pkg, usPerRequest: ((us / total) * cpuUs) / Math.max(1, requests), share: us / total }))
    .sort((a, b) => b.usPerRequest - a.usPerRequest);
}

function packageOf(url: string, functionName: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(url);
  if (m) return m[1]!;
  if (url.includes("/src/")) return "src (the app)";
  if (url.includes("/bench/")) return "bench harness";
  if (url.startsWith("node:internal/deps/undici")) return "Node's built-in undici (fetch, Request, Response, Headers)";
  if (url.startsWith("node:")) return "node (http, streams, …)";
  if (url === "") return functionName.startsWith("(") ? functionName : "native";
  return url;
}

/** A markdown table of a profile's packages, those under 2% folded into "other". */
export function profileTable(rows: ReturnType<typeof profileByPackage>): string {
  const lines = ["| package | µs/req | share |", "|---|---:|---:|"];
  let other = 0;
  let otherShare = 0;
  for (const r of rows) {
    if (r.share < 0.02) {
      other += r.usPerRequest;
      otherShare += r.share;
    } else lines.push(`| ${r.pkg} | ${r.usPerRequest.toFixed(0)} | ${(r.share * 100).toFixed(0)}% |`);
  }
  lines.push(`| other | ${other.toFixed(0)} | ${(otherShare * 100).toFixed(0)}% |`);
  const total = rows.reduce((n, r) => n + r.usPerRequest, 0);
  lines.push(`| **total (sampled)** | **${total.toFixed(0)}** | |`);
  return lines.join("\n");
}

/** One load run against `server`, with the CPU µs per request it spent. */
export async function measure(label: string, server: Served, spec: LoadSpec): Promise<Run> {
  const before = server.cpuUs();
  const mainBefore = server.mainThreadCpuUs();
  const writtenBefore = server.writtenBytes();
  const result = await load(label, spec);
  await new Promise((r) => setTimeout(r, 200)); // requests cut off by the stop settle
  const requests = Math.max(1, result.requests);
  return {
    ...result,
    cpuUsPerRequest: (server.cpuUs() - before) / requests,
    mainThreadUsPerRequest: (server.mainThreadCpuUs() - mainBefore) / requests,
    writtenBytesPerRequest: (server.writtenBytes() - writtenBefore) / requests,
  };
}

export interface Side {
  label: string;
  /** The server loaded in every run; without it, `start` gives a fresh one for each run. */
  server?: Served;
  /** A fresh server, which each run warms up (`warmupSeconds`, default 1) before measuring, then stops. */
  start?: () => Promise<Served>;
  warmupSeconds?: number;
  spec: LoadSpec | ((server: Served) => LoadSpec);
}

/** One run of a side: on its server, or on a fresh one started (and warmed up) for it. */
export async function runSide(side: Side): Promise<Run> {
  const specFor = (server: Served) => (typeof side.spec === "function" ? side.spec(server) : side.spec);
  if (side.server) return measure(side.label, side.server, specFor(side.server));
  const server = await side.start!();
  try {
    await load("warmup", { ...specFor(server), seconds: side.warmupSeconds ?? 1 });
    return await measure(side.label, server, specFor(server));
  } finally {
    if (server.proc.exitCode === null) {
      const exited = new Promise((resolve) => server.proc.once("exit", resolve));
      server.stop();
      await exited;
    }
  }
}

export interface Comparison {
  runs: Array<{ a: Run; b: Run }>;
  /** b / a throughput: median and range over the pairs. */
  ratio: { median: number; min: number; max: number };
  /** a / b CPU per request (higher is better for b). */
  cpuRatio: { median: number; min: number; max: number };
}

/** Runs A, B, A, B, … `repeats` times each, and the ratio of B to A per pair. */
export async function compare(a: Side, b: Side, repeats: number): Promise<Comparison> {
  const runs: Array<{ a: Run; b: Run }> = [];
  for (let i = 0; i < repeats; i++) {
    const ra = await runSide(a);
    const rb = await runSide(b);
    console.log(`  ${i + 1}/${repeats}: ${a.label}: ${ra.rps} req/s, ${ra.cpuUsPerRequest.toFixed(0)} µs (main ${ra.mainThreadUsPerRequest.toFixed(0)}); ${b.label}: ${rb.rps} req/s, ${rb.cpuUsPerRequest.toFixed(0)} µs (main ${rb.mainThreadUsPerRequest.toFixed(0)})`);
    runs.push({ a: ra, b: rb });
  }
  return {
    runs,
    ratio: spread(runs.map((r) => r.b.rps / Math.max(1, r.a.rps))),
    cpuRatio: spread(runs.map((r) => r.a.cpuUsPerRequest / Math.max(1, r.b.cpuUsPerRequest))),
  };
}

function spread(values: number[]) {
  const sorted = [...values].sort((x, y) => x - y);
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

export const median = (values: number[]) => spread(values).median;

/** A table of every run of a comparison, in the order run. */
export function runTable(c: Comparison): string {
  const lines = [
    "| run | req/s | CPU µs/req | of which main thread | p50 ms | p99 ms | requests | errors | non-2xx |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  c.runs.forEach(({ a, b }, i) => {
    for (const r of [a, b]) {
      lines.push(`| ${i + 1}. ${r.label} | ${r.rps} | ${r.cpuUsPerRequest.toFixed(0)} | ${r.mainThreadUsPerRequest.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.requests} | ${r.errors} | ${r.non2xx} |`);
    }
  });
  return lines.join("\n");
}

/** "0.93× (0.88–1.01)" */
export function ratioText(r: { median: number; min: number; max: number }): string {
  return `${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)})`;
}

/** Replaces (or appends) the `## title` section of BENCHMARKS.md, leaving the others as they are. */
export function writeSection(title: string, body: string): void {
  const file = resolve(import.meta.dirname, "../BENCHMARKS.md");
  const current = existsSync(file)
    ? readFileSync(file, "utf8")
    : "# Benchmarks\n\nFigures from `npm run bench` on the development machine (2 cores). Every speed target is a ratio against a floor measured in the same run.\n";
  const section = `## ${title}\n\n${body.trim()}\n`;
  const pattern = new RegExp(`## ${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n[\\s\\S]*?(?=\\n## |$)`);
  const next = pattern.test(current) ? current.replace(pattern, section) : `${current.trimEnd()}\n\n${section}`;
  writeFileSync(file, next);
}

export function machine(): string {
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  return `Node ${process.version}, ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${cpus().length} cores, load average ${load} at the start${process.env.BENCH_NOTE ? ` (${process.env.BENCH_NOTE})` : ""}`;
}

/** The identity provider every benchmark trusts: an ES256 key made for the run. */
export const BENCH_ISSUER = "https://idp.bench/";
export const BENCH_AUDIENCE = "bench";
const benchKey = generateKeyPair("ES256");

/** The bench key pair (its public half for a server configured with AUTH_PUBLIC_KEY). */
export const benchKeyPair = () => benchKey;

/** The bench key's public half, as a server in another process is handed it (BENCH_JWK). */
export async function benchJwk(): Promise<string> {
  const { publicKey } = await benchKey;
  return JSON.stringify({ ...(await exportJWK(publicKey)), alg: "ES256" });
}

/** The environment bench/child/serve.ts's app needs to trust the bench key. */
export async function benchServerEnv(db: string, config: Record<string, string> = {}): Promise<Record<string, string>> {
  return { BENCH_DB: db, BENCH_JWK: await benchJwk(), BENCH_ISSUER, BENCH_AUDIENCE, BENCH_ENV: JSON.stringify(config) };
}

/** A runtime trusting the bench key, the request limit off (one user makes all the load). */
export async function benchRuntime(env: Record<string, string> = {}): Promise<Runtime> {
  const { publicKey } = await benchKey;
  const config = parseConfig({ AUTH_ISSUER: BENCH_ISSUER, AUTH_AUDIENCE: BENCH_AUDIENCE, LOG_LEVEL: "error", RATE_LIMIT_PER_MINUTE: "0", ...env });
  return createRuntime(config, {
    authSource: { kind: "jwk", jwk: { ...(await exportJWK(publicKey)), alg: "ES256" } },
    log: createLogger("error"),
  });
}

/** An access token for `subject` signed by the bench key. */
export async function benchToken(subject: string): Promise<string> {
  const { privateKey } = await benchKey;
  return new SignJWT({ name: "bench" })
    .setProtectedHeader({ alg: "ES256" })
    .setIssuer(BENCH_ISSUER)
    .setAudience(BENCH_AUDIENCE)
    .setSubject(subject)
    .setExpirationTime("2h")
    .sign(privateKey);
}

