import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import type { Client } from "@libsql/client";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { parseConfig } from "../src/config";
import { createRuntime, type Runtime } from "../src/deps";
import { createLogger } from "../src/log";

export interface LoadResult {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
}

const AUTOCANNON = resolve(import.meta.dirname, "../node_modules/autocannon/autocannon.js");

/**
 * Loads `url` with autocannon in a child process, so the load generator and the server
 * under test each have a core, and every run is bounded by `seconds`.
 */
export async function load(
  label: string,
  url: string,
  options: { seconds?: number; connections?: number; headers?: Record<string, string>; method?: string; body?: string } = {},
): Promise<LoadResult> {
  const args = ["-j", "-d", String(options.seconds ?? 8), "-c", String(options.connections ?? 16)];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push("-H", `${k}=${v}`);
  if (options.method) args.push("-m", options.method);
  if (options.body) args.push("-b", options.body);
  const { stdout } = await promisify(execFile)(process.execPath, [AUTOCANNON, ...args, url], { maxBuffer: 16 << 20 });
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

export function table(rows: LoadResult[]): string {
  const lines = ["| run | req/s | p50 ms | p99 ms | requests | errors | non-2xx |", "|---|---:|---:|---:|---:|---:|---:|"];
  for (const r of rows) lines.push(`| ${r.label} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.requests} | ${r.errors} | ${r.non2xx} |`);
  return lines.join("\n");
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
  return `Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
}

/** The identity provider every benchmark trusts: an ES256 key made for the run. */
export const BENCH_ISSUER = "https://idp.bench/";
const BENCH_AUDIENCE = "bench";
const benchKey = generateKeyPair("ES256");

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

/** Counts database round trips (execute and batch calls) at the libSQL client. */
export function countRoundTrips(client: Client): () => number {
  let trips = 0;
  const execute = client.execute.bind(client);
  const batch = client.batch.bind(client);
  client.execute = ((...a: Parameters<typeof execute>) => (trips++, execute(...a))) as typeof client.execute;
  client.batch = ((...a: Parameters<typeof batch>) => (trips++, batch(...a))) as typeof client.batch;
  return () => trips;
}
