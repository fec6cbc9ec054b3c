import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createApp } from "./app";
import { ConfigError, parseConfig, type Config } from "./platform/config";
import { configuredAuthSource } from "./platform/deps";
import { runDailyRollover } from "./jobs/daily-rollover";
import { keepSearchIndexed } from "./jobs/search-index";
import { DEFAULT_DATABASE_URL, loadOrCreateLocalKey, localKeyFile } from "./platform/node/local-login-key";
import { createNodeDeps } from "./platform/node/node-deps";
import { serveNode } from "./platform/node/serve-node";
import { nextUtcMidnight } from "./features/account/credits";
import { HOLD_MARGIN_MS, releaseStaleHolds } from "./features/chat/holds";

/** The web client's build, beside src/ whatever the working directory. */
const DEFAULT_WEB_DIST = resolve(import.meta.dirname, "../web/dist");

async function main() {
  let config: Config;
  try {
    config = parseConfig(process.env);
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

  // Share links point at PUBLIC_BASE_URL, else at this server's own address (set once it
  // listens), never at a request's Host header.
  const { deps, client } = await createNodeDeps(config, {
    localKey,
    databaseUrl,
    databaseAuthToken: config.DATABASE_AUTH_TOKEN,
    webDist,
    baseUrl: `http://localhost:${config.PORT}`,
  });
  const { log } = deps;

  // Charges of exchanges a previous run left unfinished (a crash, a kill) are refunded:
  // those already stale now, and the rest once they are, unless a debit got to them first.
  const releaseHolds = () => releaseStaleHolds(deps).catch((err) => log.error("could not release abandoned credit holds", { err }));
  await releaseHolds();
  setTimeout(releaseHolds, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS).unref();
  // New messages wait to be indexed for search; this indexes them a few times a second.
  const stopIndexing = keepSearchIndexed(deps);
  const app = createApp(() => deps);

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
    stopIndexing();
    server.close(() => {
      client.close();
      process.exit(0);
    });
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
