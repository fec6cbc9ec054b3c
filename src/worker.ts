import type { D1Database, ExecutionContext, Fetcher, R2Bucket, RateLimit, ScheduledController } from "@cloudflare/workers-types";
// Turso over HTTP (libsql:// URLs are taken as https://): one request a statement or batch
// suits a Worker, which keeps no socket between requests.
import { createClient } from "@libsql/client/http";
import { createApp } from "./app";
import { rateLimiterFromBinding, unlimited } from "./platform/auth/rate-limit";
import { parseConfig } from "./platform/config";
import { dbFromD1, dbFromLibsql, type Db } from "./platform/db";
import { createRuntime, type AssetSource, type Deps, type Runtime } from "./platform/deps";
import { runDailyRollover } from "./jobs/daily-rollover";
import type { WorkersAiBinding } from "./platform/models/workers-ai";
import { r2BlobStore } from "./platform/worker/r2-blob-store";

export interface Env {
  DB?: D1Database;
  /** Workers AI: serves svc-70b when SVC_MODEL_BASE_URL is not set. */
  AI?: WorkersAiBinding;
  /** Failed authentications per client address, counted by Cloudflare (wrangler.toml). */
  AUTH_FAILURE_LIMITER?: RateLimit;
  /** Successful sign-ins per client address, and per identity, counted by Cloudflare (wrangler.toml). */
  SIGN_IN_ADDRESS_LIMITER?: RateLimit;
  SIGN_IN_IDENTITY_LIMITER?: RateLimit;
  /** The web client's build (web/dist), from `[assets]` in wrangler.toml. */
  ASSETS?: Fetcher;
  /** Attachments' bytes (wrangler.toml [[r2_buckets]]). */
  ATTACHMENTS?: R2Bucket;
  [variable: string]: unknown;
}

/** How stale an isolate's copy of the ended sessions may be before a session token's request reads it again. */
const ENDED_SESSIONS_MAX_AGE_MS = 30_000;

// Parsed once per isolate: config, logger and the JWT verifier (with its JWKS cache).
// Nothing here holds I/O objects, which Workers forbid sharing between requests.
let runtime: Promise<Runtime> | undefined;
function runtimeFor(env: Env): Promise<Runtime> {
  runtime ??= createRuntime(parseConfig(env), {
    workersAi: env.AI,
    // A per-isolate counter would let each isolate allow the limit on its own: without the
    // binding there is no limit on Workers.
    authFailureLimiter: env.AUTH_FAILURE_LIMITER ? rateLimiterFromBinding(env.AUTH_FAILURE_LIMITER) : unlimited,
    signInLimiters: {
      address: env.SIGN_IN_ADDRESS_LIMITER ? rateLimiterFromBinding(env.SIGN_IN_ADDRESS_LIMITER) : unlimited,
      identity: env.SIGN_IN_IDENTITY_LIMITER ? rateLimiterFromBinding(env.SIGN_IN_IDENTITY_LIMITER) : unlimited,
    },
    // Another isolate's endings are read from the database at most this long after (docs/limits-and-errors.md).
    endedSessionsMaxAgeMs: ENDED_SESSIONS_MAX_AGE_MS,
    // A request may not wait on what another resolves: followers of a reply read it from the database.
    liveRepliesShared: false,
  })
    .then((rt) => {
      if (!rt.sessionTokens) rt.log.warn("SESSION_SIGNING_KEY is not set: nobody can sign in to the web client (POST /auth/session answers 503); npm run session-key prints a key");
      return rt;
    })
    .catch((err) => {
      runtime = undefined;
      throw err;
    });
  return runtime;
}

// One drizzle handle per isolate for each database: statements prepared per handle
// (src/platform/db.ts perDb) are built once per isolate rather than once per request. A D1
// binding is the same object for every request of the isolate; libSQL's HTTP client holds
// no connection of its own (each call is a fetch made within the request that calls it),
// so one client per URL serves every request too.
const d1Handles = new WeakMap<D1Database, Db>();
let libsql: { url: string; db: Db } | undefined;

/** libSQL (Turso) when DATABASE_URL is set; otherwise the D1 binding, as in `wrangler dev`. */
function databaseFor(env: Env, rt: Runtime): Db {
  const url = rt.config.DATABASE_URL;
  if (url) {
    if (libsql?.url !== url) libsql = { url, db: dbFromLibsql(createClient({ url, authToken: rt.config.DATABASE_AUTH_TOKEN })) };
    return libsql.db;
  }
  if (env.DB) {
    let db = d1Handles.get(env.DB);
    if (!db) d1Handles.set(env.DB, (db = dbFromD1(env.DB)));
    return db;
  }
  throw new Error("no database: set DATABASE_URL (libSQL/Turso) or bind a D1 database as DB");
}

/** Cloudflare puts the address of the client that reached it here; clients cannot forge it. */
const clientAddress = (c: { req: { header(name: string): string | undefined } }) => c.req.header("CF-Connecting-IP");

/** The web client's files from the static assets binding; its 404 means "no such file". */
function assetsFor(env: Env): AssetSource | undefined {
  const binding = env.ASSETS;
  if (!binding) return undefined;
  return async (path) => {
    const res = (await binding.fetch(new URL(path, "https://assets.invalid").href)) as unknown as Response;
    if (res.ok) return res;
    await res.body?.cancel();
    return undefined;
  };
}

/**
 * pdf.js, as a module of its own beside the Worker's (wrangler.toml's `find_additional_modules`
 * and its ESModule rule upload src/platform/worker/pdfjs-module.mjs as is): loaded when the first
 * PDF arrives, not parsed at every isolate's start. The import is written here, in the
 * folder of the entry, because wrangler keeps its path as written and the runtime resolves
 * it from the bundle's root.
 */
const loadPdfjs = () => import("./platform/worker/pdfjs-module.mjs");

// The dependencies are the same for every request of an isolate with the same bindings
// and origin, so they are built once per pair rather than spread anew for each request.
const dependencies = new WeakMap<Env, Map<string, Deps>>();

/** Paths whose answers depend on the model list: a provider's list that is due is read first. */
const MODEL_PATHS = /^\/(models|chat|v1|me)(\/|$)/;

const app = createApp(async (c) => {
  const env = c.env as Env;
  const rt = await runtimeFor(env);
  // No timers on Workers: providers' lists (discover: true) are read again as a request
  // finds them due, and the isolate's copy may be lost at any time.
  if (rt.models.discovers && MODEL_PATHS.test(c.req.path)) await rt.models.refresh();
  // Cloudflare sets the request URL from the route it served, not from a header a caller
  // controls, so it is a safe base for share links when PUBLIC_BASE_URL is not set.
  const origin = new URL(c.req.url).origin;
  let byOrigin = dependencies.get(env);
  if (!byOrigin) dependencies.set(env, (byOrigin = new Map()));
  let deps = byOrigin.get(origin);
  if (!deps) {
    deps = { ...rt, db: databaseFor(env, rt), clientAddress, assets: assetsFor(env), blobs: env.ATTACHMENTS && r2BlobStore(env.ATTACHMENTS), pdfjs: loadPdfjs, baseUrl: origin };
    // Origins are few; a stranger mix is simply not kept past a handful.
    if (byOrigin.size < 16) byOrigin.set(origin, deps);
  }
  return deps;
});

export default {
  fetch: app.fetch,
  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    const rt = await runtimeFor(env);
    // The day is the one the cron was scheduled for, however late this run starts.
    const scheduledTime = new Date(controller.scheduledTime);
    ctx.waitUntil(runDailyRollover({ ...rt, db: databaseFor(env, rt), blobs: env.ATTACHMENTS && r2BlobStore(env.ATTACHMENTS) }, { scheduledTime }));
  },
};
