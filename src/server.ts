import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createApp } from "./app";
import { ConfigError, parseConfig, type Config } from "./platform/config";
import { configuredAuthSource, type Runtime } from "./platform/deps";
import { causeChain } from "./platform/errors";
import { configuresAModel } from "./platform/models/catalog";
import { runDailyRollover } from "./jobs/daily-rollover";
import { keepSearchIndexed } from "./jobs/search-index";
import { DEFAULT_DATABASE_URL, loadOrCreateLocalKey, localKeyFile } from "./platform/node/local-login-key";
import { createNodeDeps } from "./platform/node/node-deps";
import { serveNode } from "./platform/node/serve-node";
import { compressJson } from "./platform/node/compress-json";
import { nextUtcMidnight } from "./features/account/credits";
import { HOLD_MARGIN_MS, releaseStaleHolds } from "./features/chat/holds";

/** The web client's build, beside src/ whatever the working directory. */
const DEFAULT_WEB_DIST = resolve(import.meta.dirname, "../web/dist");

async function main() {
  let config: Config;
  try {
    config = parseConfig(process.env, { readFile: (path) => readFileSync(path, "utf8") });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const databaseUrl = config.DATABASE_URL ?? DEFAULT_DATABASE_URL;

  let localKey;
  if (!configuredAuthSource(config)) {
    if (config.NODE_ENV === "production") {
      console.error("no identity provider is configured: set AUTH_OIDC_ISSUER, AUTH_JWKS_URL, AUTH_PUBLIC_KEY or AUTH_HS256_SECRET");
      process.exit(1);
    }
    localKey = await loadOrCreateLocalKey(localKeyFile(databaseUrl));
    console.warn(
      "\n  LOCAL LOGIN: no identity provider is configured, so this server trusts tokens signed by\n" +
        "  the key in its data folder: log in with a name in the web client, or get a token with\n" +
        "  npm run token -- <name>. Set AUTH_OIDC_ISSUER (or AUTH_JWKS_URL) to use a real identity provider.\n",
    );
  }

  const webDist = config.WEB_DIST_DIR ? resolve(config.WEB_DIST_DIR) : DEFAULT_WEB_DIST;
  if (!existsSync(resolve(webDist, "index.html"))) {
    console.warn(`  The web client is not built (no ${webDist}/index.html): run npm run build:web. The API works without it.\n`);
  }

  // First run: in local mode with no model configured, a local Ollama is looked for (and
  // its models offered) at start and every 30 s. Never in the Worker.
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
  });
  const { log } = deps;
  await deps.models.refresh();
  logModels(deps, lookForOllama);
  // Providers' lists are read again as each falls due (Ollama every 30 s, others every 5 min).
  const discovery = deps.models.discovers ? setInterval(() => void deps.models.refresh().then(() => lookForOllama && logModels(deps, true, true)), 30_000) : undefined;
  discovery?.unref();
  // Linked sign-in identities changed by other processes sharing a remote database.
  const linksTimer = setInterval(() => deps.identityLinks.load(deps.db).catch((err) => log.warn("could not reread linked identities", { err })), 60_000);
  linksTimer.unref();

  // Charges of exchanges a previous run left unfinished (a crash, a kill) are refunded:
  // those already stale now, and the rest once they are, unless a debit got to them first.
  const releaseHolds = () => releaseStaleHolds(deps).catch((err) => log.error("could not release abandoned credit holds", { err }));
  await releaseHolds();
  setTimeout(releaseHolds, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS).unref();
  // New messages wait to be indexed for search; this indexes them a few times a second.
  const stopIndexing = keepSearchIndexed(deps);
  const app = createApp(() => deps, { compression: compressJson() });

  const server = serveNode(app.fetch, { port: config.PORT, hostname: process.env.HOST ?? "0.0.0.0" }, (info) => {
    deps.baseUrl = `http://localhost:${info.port}`;
    log.info("listening", { url: deps.baseUrl, database: databaseUrl.replace(/\?.*$/, "") });
  });

  // The same job the Worker's cron runs, at every 00:00 UTC.
  let timer: NodeJS.Timeout;
  const scheduleRollover = () => {
    const now = deps.now();
    const midnight = nextUtcMidnight(now).getTime();
    timer = setTimeout(async () => {
      await runDailyRollover(deps, { scheduledTime: new Date(midnight) }).catch((err) => log.error("daily rollover failed", { err }));
      scheduleRollover();
    }, midnight - now.getTime() + 1000);
    timer.unref();
  };
  scheduleRollover();

  const shutdown = () => {
    clearTimeout(timer);
    clearInterval(discovery);
    clearInterval(linksTimer);
    stopIndexing();
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
        ? `Run Ollama on this machine (ollama pull llama3.2; it is looked for at ${ollama} every 30 s, OLLAMA_BASE_URL to change it), or `
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
