import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export interface ServerProcess {
  /** Where it listens, as it logged it (http://localhost:<port>). */
  url: string;
  /** Its data folder (database, keys). */
  dataDir: string;
  /** Its DATABASE_URL: its data folder also holds its local-login key (npm run token). */
  databaseUrl: string;
  /** What it wrote to stdout and stderr so far, in the order written. */
  output(): string;
  close(): Promise<void>;
}

/**
 * The entry as `npm start` runs it: the bundle in dist/ (built by the test run's global setup,
 * test/support/build-server.ts; see scripts/build-server.mjs). It starts in a second where
 * `tsx src/server.ts` took five, at a third of the CPU. With `forbidTsx`, a module hook fails
 * any import of tsx, in every thread: the built server must run on plain Node
 * (test/built-server.test.ts). Only there: the hook's loader thread cost every start about
 * 0.5 s of CPU (1.7 s instead of 1.2).
 */
export function serverEntryArgs({ forbidTsx = false } = {}): string[] {
  if (!forbidTsx) return ["--enable-source-maps", "dist/server.js"];
  const hook = `export async function resolve(specifier, context, next) { if (specifier === "tsx" || specifier.startsWith("tsx/")) throw new Error("the built server imported " + specifier); return next(specifier, context); }`;
  const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
  return ["--enable-source-maps", "--import", `data:text/javascript,${encodeURIComponent(register)}`, "dist/server.js"];
}

/**
 * The real Node entry (dist/server.js, see serverEntryArgs) as a child process on a port the
 * system picks, over a fresh libSQL file in a temporary folder (which also holds its
 * local-login key). `env` adds variables; the parent's AUTH_* and PUBLIC_BASE_URL are not
 * inherited.
 */
export async function startServerProcess(
  env: Record<string, string> = {},
  options: {
    /** A data folder to serve from (a restart: the same database and keys), which `close` then leaves in place. */
    dataDir?: string;
    /** Fail any import of tsx (serverEntryArgs). */
    forbidTsx?: boolean;
  } = {},
): Promise<ServerProcess> {
  const dir = options.dataDir ?? mkdtempSync(join(tmpdir(), "plant-chat-server-"));
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(AUTH_|PUBLIC_BASE_URL|NODE_ENV|WEB_DIST_DIR|STT_|PORT$|DATABASE_)/.test(k)),
  );
  const databaseUrl = `file:${join(dir, "db")}`;
  // Its stderr goes into the stdout pipe (the shell's 2>&1, then exec): one stream, in the
  // order written, so that what it logged before "listening" is all there once that is.
  // Read from two pipes, a warning could arrive after the line that ends the wait.
  const child: ChildProcess = spawn("sh", ["-c", 'exec "$0" "$@" 2>&1', process.execPath, ...serverEntryArgs(options)], {
    cwd: ROOT,
    env: { ...inherited, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: databaseUrl, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"msg":"listening","url":"(http:\/\/localhost:\d+)"/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`the server exited with ${code} before listening:\n${output}`)));
  });
  return {
    url,
    dataDir: dir,
    databaseUrl,
    output: () => output,
    async close() {
      if (child.exitCode === null) {
        await new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGTERM");
        });
      }
      if (!options.dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs the real Node entry expecting it to refuse to start; resolves with its exit code and output. */
export function failedStart(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "plant-chat-server-"));
  const child = spawn(process.execPath, serverEntryArgs(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: `file:${join(dir, "db")}`, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const onData = (c: Buffer) => {
    output += c.toString();
    // It started after all: stop it, and let the caller's assertion on the code fail.
    if (output.includes('"msg":"listening"')) child.kill("SIGTERM");
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  return new Promise((resolve) => {
    child.once("exit", (code) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, output });
    });
  });
}
