import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface DevProcess {
  /** Where `wrangler dev` listens, as it logged it. */
  url: string;
  /** What the command wrote to stdout and stderr so far (the Worker's log lines included). */
  output(): string;
  /** The first match of `pattern` in the output, once there is one (or when the command exits: none). */
  logged(pattern: RegExp): Promise<RegExpExecArray | null>;
  /** Stops the command and every process it started (wrangler, workerd). */
  stop(): Promise<void>;
}

/** The environment of a wrangler command run by a test: no telemetry, no inherited identity provider. */
function wranglerEnv(dir: string): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(AUTH_|PUBLIC_BASE_URL|NODE_ENV|DATABASE_|CLOUDFLARE_)/.test(k)),
  );
  // DATABASE_URL only places the local-login key that scripts/dev.ts makes in `dir`.
  return { ...inherited, WRANGLER_SEND_METRICS: "false", DATABASE_URL: `file:${join(dir, "local.db")}`, FORCE_COLOR: "0" };
}

/** A folder for one run's local D1 state (`--persist-to`) and local-login key. */
export function devStateDir(): { dir: string; persistTo: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "plant-chat-dev-"));
  return { dir, persistTo: join(dir, "state"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs `wrangler <args>` (this project's, by node: npx took seconds to find it) to completion; throws with its output when it fails. */
export function wrangler(dir: string, args: string[]): string {
  const bin = createRequire(import.meta.url).resolve("wrangler/bin/wrangler.js");
  const result = spawnSync(process.execPath, [bin, ...args], { env: wranglerEnv(dir), encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/**
 * What `npm run dev` runs (scripts/dev.ts: migrations, then `wrangler dev`; the web client is
 * the caller's to build) on a port the system picks, over the local D1 state in `persistTo`.
 * It runs in its own process group, so stopping it stops wrangler and workerd with it.
 */
export async function startDevProcess(dir: string, persistTo: string): Promise<DevProcess> {
  const args = ["--port", "0", "--ip", "127.0.0.1", "--persist-to", persistTo];
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/dev.ts", ...args], {
    env: wranglerEnv(dir),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const group = child.pid!;
  let output = "";
  const stop = async () => {
    const alive = () => {
      try {
        process.kill(-group, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (alive()) process.kill(-group, "SIGTERM");
    for (let waited = 0; alive() && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    if (alive()) process.kill(-group, "SIGKILL");
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /Ready on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.once("exit", (code) => reject(new Error(`scripts/dev.ts exited with ${code} before it was ready:\n${output}`)));
    });
    const logged = (pattern: RegExp) =>
      new Promise<RegExpExecArray | null>((resolve) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match || child.exitCode !== null) done(match);
        };
        const done = (match: RegExpExecArray | null) => {
          child.stdout.off("data", check);
          child.stderr.off("data", check);
          child.off("exit", check);
          resolve(match);
        };
        child.stdout.on("data", check);
        child.stderr.on("data", check);
        child.once("exit", check);
        check();
      });
    return { url, output: () => output, logged, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
