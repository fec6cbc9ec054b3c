import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createApp } from "./app";
import { ConfigError, parseConfig, type Config } from "./platform/config";
import { configuredAuthSource, type Deps, type Runtime } from "./platform/deps";
import { causeChain } from "./platform/errors";
import { configuresAModel } from "./platform/models/catalog";
import { runDailyRollover } from "./jobs/daily-rollover";
import { keepSearchIndexed } from "./jobs/search-index";
import { DEFAULT_DATABASE_URL, loadOrCreateLocalKey, localKeyFile } from "./platform/node/local-login-key";
import { createNodeDeps } from "./platform/node/node-deps";
import { serveNode } from "./platform/node/serve-node";
import { compressJson } from "./platform/node/compress-json";
import { promMetrics } from "./platform/node/prom-metrics";
import { startBanner } from "./platform/node/start-banner";
import type { LocalKey } from "./platform/auth/local-login";
import { nextUtcMidnight } from "./features/account/credits";
import { HOLD_MARGIN_MS, releaseStaleHolds } from "./features/chat/holds";

/** How often sessions ended by other processes over a shared remote database are read (docs/limits-and-errors.md). */
const ENDED_SESSIONS_REREAD_MS = 10_000;

/** The web client's build, beside src/ whatever the working directory. */
const DEFAULT_WEB_DIST = resolve(import.meta.dirname, "../web/dist");

async function main() {
  const config = readConfig();
  const databaseUrl = config.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const localKey = await localLoginKey(config, databaseUrl);
  // Local login trusts a bare name, so it listens on loopback only unless HOST says otherwise.
  const host = config.HOST ?? (localKey ? "127.0.0.1" : "0.0.0.0");

  const webDist = config.WEB_DIST_DIR ? resolve(config.WEB_DIST_DIR) : DEFAULT_WEB_DIST;
  if (!existsSync(resolve(webDist, "index.html"))) {
    console.warn(`  The web client is not built (no ${webDist}/index.html): run npm run build:web. The API works without it.\n`);
  }

  // First run: in local mode with no model configured, a local Ollama is looked for (and
  // its models offered) at start and every OLLAMA_REFRESH_SECONDS (30 s). Never in the Worker.
  const lookForOllama = localKey !== undefined && !configuresAModel(config.catalog);
  // Share links point at PUBLIC_BASE_URL, else at this server's own address (set once it
  // listens), never at a request's Host header.
  const { deps, client, settled } = await createNodeDeps(config, {
    localKey,
    databaseUrl,
    databaseAuthToken: config.DATABASE_AUTH_TOKEN,
    webDist,
    ...(lookForOllama ? { localOllama: config.OLLAMA_BASE_URL } : {}),
    baseUrl: `http://localhost:${config.PORT}`,
    // What GET /metrics answers (prom-client); the Worker collects none.
    metrics: promMetrics(),
  });
  await deps.models.refresh();
  logModels(deps, lookForOllama);
  const stopBackground = await startBackgroundWork(deps, databaseUrl, lookForOllama);
  const app = createApp(() => deps, { compression: compressJson() });

  const server = serveNode(app.fetch, { port: config.PORT, hostname: host }, (info) => {
    deps.baseUrl = `http://localhost:${info.port}`;
    console.log(startBanner({ config, host, port: info.port, localLogin: localKey !== undefined }));
    deps.log.info("listening", { url: deps.baseUrl, host, database: databaseUrl.replace(/\?.*$/, "") });
  });

  const shutdown = () => {
    stopBackground();
    server.close(async () => {
      // Work that outlives its reply (a new context's title) finishes before the process exits.
      await settled();
      client.close();
      process.exit(0);
    });
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

/** The configuration from the environment; a bad one ends the process with what to fix. */
function readConfig(): Config {
  try {
    return parseConfig(process.env, { readFile: (path) => readFileSync(path, "utf8") });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(1);
  }
}

/** Local mode's signing key when no identity provider is configured (never in production). */
async function localLoginKey(config: Config, databaseUrl: string): Promise<LocalKey | undefined> {
  if (configuredAuthSource(config)) return undefined;
  if (config.NODE_ENV === "production") {
    console.error("no identity provider is configured: set AUTH_OIDC_ISSUER, AUTH_JWKS_URL, AUTH_PUBLIC_KEY or AUTH_HS256_SECRET");
    process.exit(1);
  }
  return loadOrCreateLocalKey(localKeyFile(databaseUrl));
}

/**
 * The server's timers: model discovery, what other processes changed in a shared remote
 * database, abandoned holds, the search index and the daily rollover. Returns their stop.
 */
async function startBackgroundWork(deps: Deps, databaseUrl: string, lookForOllama: boolean): Promise<() => void> {
  const { config, log } = deps;
  // Providers' lists are read again as each falls due (Ollama every OLLAMA_REFRESH_SECONDS, others every 5 min).
  const discoveryTick = Math.min(30_000, config.OLLAMA_REFRESH_SECONDS * 1000);
  const discovery = deps.models.discovers ? setInterval(() => void deps.models.refresh().then(() => lookForOllama && logModels(deps, true, true)), discoveryTick) : undefined;
  discovery?.unref();
  // Linked sign-in identities changed by other processes sharing a remote database.
  const linksTimer = setInterval(() => deps.identityLinks.load(deps.db).catch((err) => log.warn("could not reread linked identities", { err })), 60_000);
  linksTimer.unref();
  // Sessions ended by other processes sharing a remote database (an embedded file is this
  // process's alone: it knows each ending as it happens).
  const endedTimer = databaseUrl.startsWith("file:")
    ? undefined
    : setInterval(() => deps.endedSessions.load(deps.db, deps.now()).catch((err) => log.warn("could not reread ended sessions", { err })), ENDED_SESSIONS_REREAD_MS);
  endedTimer?.unref();

  // Charges of exchanges a previous run left unfinished (a crash, a kill) are refunded:
  // those already stale now, and the rest once they are, unless a debit got to them first.
  const releaseHolds = () => releaseStaleHolds(deps).catch((err) => log.error("could not release abandoned credit holds", { err }));
  await releaseHolds();
  setTimeout(releaseHolds, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS).unref();
  // New messages wait to be indexed for search; this indexes them a few times a second.
  const stopIndexing = keepSearchIndexed(deps);
  const stopRollover = scheduleDailyRollover(deps);
  return () => {
    clearInterval(discovery);
    clearInterval(linksTimer);
    clearInterval(endedTimer);
    stopIndexing();
    stopRollover();
  };
}

/** The same job the Worker's cron runs, at every 00:00 UTC. Returns its stop. */
function scheduleDailyRollover(deps: Deps): () => void {
  let timer: NodeJS.Timeout;
  const schedule = () => {
    const now = deps.now();
    const midnight = nextUtcMidnight(now).getTime();
    timer = setTimeout(async () => {
      await runDailyRollover(deps, { scheduledTime: new Date(midnight) }).catch((err) => deps.log.error("daily rollover failed", { err }));
      schedule();
    }, midnight - now.getTime() + 1000);
    timer.unref();
  };
  schedule();
  return () => clearTimeout(timer);
}

let lastModelsLine = "";

/**
 * Says which models can answer, and when none can, exactly what to set. `quiet`: only
 * when that changed (the discovery timer).
 */
function logModels(runtime: Runtime, lookingForOllama: boolean, quiet = false) {
  const available = runtime.models.list().filter((m) => m.available).map((m) => m.id);
  const line = available.join(",");
  if (quiet && line === lastModelsLine) return;
  lastModelsLine = line;
  if (available.length > 0) {
    runtime.log.info("models available", { models: available, default: runtime.models.defaultModel()?.id });
    return;
  }
  const ollama = runtime.config.OLLAMA_BASE_URL;
  runtime.log.warn(
    "no model is available: chat will answer 503 until one is. " +
      (lookingForOllama
        ? `Run Ollama on this machine (ollama pull llama3.2; it is looked for at ${ollama} every ${runtime.config.OLLAMA_REFRESH_SECONDS} s, OLLAMA_BASE_URL to change it), or `
        : "") +
      "set SVC_MODEL_BASE_URL to an OpenAI-compatible server's …/v1 (vLLM, llama.cpp, Ollama), or MODELS (or MODELS_FILE) to a catalog: see docs/chat.md",
    {
      models: runtime.models.list().map((m) => ({ id: m.id, setup: m.setup })),
    },
  );
}

main().catch((err) => {
  // With the causes: drizzle's "Failed query" hides the driver's reason.
  const chain = causeChain(err);
  const why = chain.length > 0 ? chain.map((e) => e.message).join("\n  because: ") : String(err);
  console.error(`the server could not start: ${why}`);
  process.exit(1);
});
