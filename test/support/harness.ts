import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { inject } from "vitest";
import { createApp, type App } from "../../src/app";
import { parseConfig } from "../../src/platform/config";
import { dbFromLibsql, type Db } from "../../src/platform/db";
import type { Deps } from "../../src/platform/deps";
import type { Logger } from "../../src/platform/log";
import type { WorkersAiBinding } from "../../src/platform/models/workers-ai";
import { createNodeDeps } from "../../src/platform/node/node-deps";
import { openDatabase } from "../../src/platform/node/open-database";
import { serveNode } from "../../src/platform/node/serve-node";
import { BUILT_DATABASE_THREAD } from "./build-server";
import { startIdentityProvider, type IdentityProvider } from "./identity-provider";
import { CountingClient } from "./counting-client";

/**
 * The libSQL file at `path` opened as another server process over it would (a restart, a
 * second instance): migrated, then served by the database thread's built bundle, which
 * starts without tsx (ThreadClient.open).
 */
export function openDatabaseFile(path: string) {
  return openDatabase(`file:${path}`, undefined, undefined, BUILT_DATABASE_THREAD);
}

/** A clock the test moves by hand. */
export function createClock(start = new Date("2026-11-22T12:00:00.000Z")) {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    set: (to: Date | string) => void (current = new Date(to).getTime()),
    advance: (ms: number) => void (current += ms),
  };
}
export type Clock = ReturnType<typeof createClock>;

/** A logger that keeps what it is told, so tests can assert on logs (and their secrets). */
export function createMemoryLogger() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { log, lines, text: () => JSON.stringify(lines, (_k, v) => (v instanceof Error ? { message: v.message, stack: v.stack } : v)) };
}

export interface Harness {
  app: App;
  db: Db;
  deps: Deps;
  idp: IdentityProvider;
  clock: Clock;
  logs: ReturnType<typeof createMemoryLogger>;
  /** Path of the libSQL database file. */
  dbFile: string;
  /** Database round trips (libSQL execute/batch calls) made since the harness started. */
  roundTrips(): number;
  /** A request to the app, as a client would send it. */
  request(path: string, init?: RequestInit & { json?: unknown; token?: string; apiKey?: string }): Promise<Response>;
  /** An access token for a user named `name` (the same name is the same user). */
  signIn(name: string, claims?: Record<string, unknown>): Promise<string>;
  /**
   * The app over the same database through a handle of its own, as another process (or a
   * Worker's other isolate) has it: nothing the app keeps in memory per handle is shared.
   */
  anotherProcess(): App;
  /** Serves the app on 127.0.0.1 and returns its base URL. */
  listen(): Promise<string>;
  /** Waits for the work replies left running (new contexts' titles) to finish. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The app over a fresh libSQL file migrated from migrations/ (a copy of the one migrated for
 * the run), trusting a real identity provider on loopback. `env` adds or overrides
 * configuration variables.
 */
export async function createHarness(
  options: {
    /** Configuration; a function of the identity provider when it needs its addresses. */
    env?: Record<string, string> | ((idp: IdentityProvider) => Record<string, string>);
    clock?: Clock;
    workersAi?: WorkersAiBinding;
    /** Offer a local Ollama's models at this address, as the Node server does on first run. */
    localOllama?: string;
    /** Told the SQL of each statement the app sends. */
    onStatement?(sql: string): void;
    /** Told the SQL of each statement the app sends and how many rows it returned. */
    onRows?(sql: string, rows: number): void;
  } = {},
): Promise<Harness> {
  const idp = await startIdentityProvider();
  const dir = mkdtempSync(join(tmpdir(), "plant-chat-test-"));
  const dbFile = join(dir, "test.db");
  // A copy of the file migrated once for the run (./migrated-database.ts).
  copyFileSync(inject("migratedDatabase"), dbFile);
  const clock = options.clock ?? createClock();
  const logs = createMemoryLogger();
  const config = parseConfig({
    AUTH_JWKS_URL: idp.jwksUrl,
    AUTH_ISSUER: idp.issuer,
    AUTH_AUDIENCE: idp.audience,
    ...(typeof options.env === "function" ? options.env(idp) : options.env),
  });
  // The Node server's own wiring, with the test's clock, logger, Workers AI binding and,
  // as on the server's first run, a local Ollama to offer. Its database thread runs the
  // bundle built for the run (test/support/build-server.ts), which starts without tsx.
  const node = await createNodeDeps(config, {
    databaseUrl: `file:${dbFile}`,
    builtDatabaseThread: BUILT_DATABASE_THREAD,
    now: clock.now,
    log: logs.log,
    workersAi: options.workersAi,
    localOllama: options.localOllama,
  });
  // The same database, through a client that counts its round trips.
  const { client, settled } = node;
  const counting = new CountingClient(client, { onStatement: options.onStatement, onRows: options.onRows });
  const db = dbFromLibsql(counting);
  const deps: Deps = { ...node.deps, db };
  const roundTrips = () => counting.trips;
  const app = createApp(() => deps);
  let server: ServerType | undefined;

  return {
    app,
    db,
    deps,
    idp,
    clock,
    logs,
    dbFile,
    roundTrips,
    request(path, init = {}) {
      const { json, token, apiKey, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (json !== undefined) {
        headers.set("Content-Type", "application/json");
        rest.body = typeof json === "string" ? json : JSON.stringify(json);
      }
      if (token) headers.set("Authorization", `Bearer ${token}`);
      if (apiKey) headers.set("X-API-Key", apiKey);
      return Promise.resolve(app.request(path, { ...rest, headers }));
    },
    anotherProcess: () => {
      const other: Deps = { ...deps, db: dbFromLibsql(counting) };
      return createApp(() => other);
    },
    signIn: (name, claims = {}) => idp.sign(`user:${name}`, { name, ...claims }),
    async listen() {
      server = await new Promise<ServerType>((resolve) => {
        const s = serveNode(app.fetch, { port: 0, hostname: "127.0.0.1" }, () => resolve(s));
      });
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    settled,
    async close() {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      await settled();
      client.close();
      await idp.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

