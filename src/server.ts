import { resolve } from "node:path";
import { serve } from "@hono/node-server";
import { createApp } from "./app";
import { ConfigError, parseConfig, type Config } from "./config";
import { configuredAuthSource, createRuntime } from "./deps";
import { runDailyRollover } from "./jobs/daily-rollover";
import { DEFAULT_DATABASE_URL, LOCAL_AUDIENCE, LOCAL_ISSUER, loadOrCreateLocalKey, localKeyFile } from "./local-login";
import { openDatabase } from "./open-database";
import { nextUtcMidnight } from "./services/credits";
import { HOLD_MARGIN_MS, releaseStaleHolds } from "./services/holds";

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

  let authSource = configuredAuthSource(config);
  if (!authSource) {
    if (config.NODE_ENV === "production") {
      console.error("no identity provider is configured: set AUTH_JWKS_URL, AUTH_PUBLIC_KEY or AUTH_HS256_SECRET");
      process.exit(1);
    }
    const key = await loadOrCreateLocalKey(localKeyFile(databaseUrl));
    authSource = { kind: "jwk", jwk: key.publicJwk };
    config = { ...config, AUTH_ISSUER: LOCAL_ISSUER, AUTH_AUDIENCE: LOCAL_AUDIENCE };
    console.warn(
      "\n  LOCAL LOGIN: no identity provider is configured, so this server trusts tokens signed by\n" +
        "  the key in its data folder. Get one with:  npm run token -- <name>\n" +
        "  Set AUTH_JWKS_URL (or AUTH_PUBLIC_KEY) to use a real identity provider.\n",
    );
  }

  const runtime = await createRuntime(config, { authSource });
  const { db, client } = await openDatabase(databaseUrl, config.DATABASE_AUTH_TOKEN);
  const deps = { ...runtime, db };

  // Charges of exchanges a previous run left unfinished (a crash, a kill) are refunded:
  // those already stale now, and the rest once they are, unless a debit got to them first.
  const releaseHolds = () => releaseStaleHolds(deps).catch((err) => runtime.log.error("could not release abandoned credit holds", { err }));
  await releaseHolds();
  setTimeout(releaseHolds, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS).unref();
  const app = createApp(() => deps);

  const server = serve({ fetch: app.fetch, port: config.PORT, hostname: process.env.HOST ?? "0.0.0.0" }, (info) => {
    runtime.log.info("listening", { url: `http://localhost:${info.port}`, database: databaseUrl.replace(/\?.*$/, "") });
  });

  // The same job the Worker's cron runs, at every 00:00 UTC.
  let timer: NodeJS.Timeout;
  const scheduleRollover = () => {
    const now = runtime.now();
    const midnight = nextUtcMidnight(now).getTime();
    timer = setTimeout(async () => {
      await runDailyRollover(deps, { scheduledTime: new Date(midnight) }).catch((err) => runtime.log.error("daily rollover failed", { err }));
      scheduleRollover();
    }, midnight - now.getTime() + 1000);
    timer.unref();
  };
  scheduleRollover();

  const shutdown = () => {
    clearTimeout(timer);
    server.close(() => {
      client.close();
      process.exit(0);
    });
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
