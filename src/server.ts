import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import type { AddressInfo } from "node:net";
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { createApp, type App } from "./app";
import { ConfigError, parseConfig, type Config } from "./platform/config";
import { configuredAuthSource, createRuntime, type Deps, type Runtime } from "./platform/deps";
import { configuresAModel } from "./platform/models/catalog";
import { runDailyRollover } from "./jobs/daily-rollover";
import { keepSearchIndexed } from "./jobs/search-index";
import { DEFAULT_DATABASE_URL, loadOrCreateLocalKey, localKeyFile, sessionKeyFile } from "./platform/node/local-login-key";
import { openDatabase } from "./platform/node/open-database";
import { nextUtcMidnight } from "./features/account/credits";
import { HOLD_MARGIN_MS, releaseStaleHolds } from "./features/chat/holds";
import { clientGoneFromSocket, readBodyFromSocket } from "./platform/node/socket-request";
import { createUpstreamPool } from "./platform/node/upstream-pool";
import { webFilesFrom } from "./platform/node/web-files";

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
  // The sessions' signing key: SESSION_SIGNING_KEY, else one kept beside the database.
  const sessionKey = config.SESSION_SIGNING_KEY ? undefined : JSON.stringify((await loadOrCreateLocalKey(sessionKeyFile(databaseUrl))).privateJwk);
  // This process sees its own changes to linked identities at once; the timer below picks up
  // those of other processes sharing a remote database.
  const runtime = await createRuntime(config, {
    localKey,
    sessionKey,
    identityLinksMaxAgeMs: Infinity,
    upstreamFetch: createUpstreamPool(),
    ...(lookForOllama ? { localOllama: config.OLLAMA_BASE_URL } : {}),
  });
  await runtime.models.refresh();
  logModels(runtime, lookForOllama);
  // Providers' lists are read again as each falls due (Ollama every 30 s, others every 5 min).
  const discovery = runtime.models.discovers ? setInterval(() => void runtime.models.refresh().then(() => lookForOllama && logModels(runtime, true, true)), 30_000) : undefined;
  discovery?.unref();
  const { db, client, databaseFileProblem } = await openDatabase(databaseUrl, config.DATABASE_AUTH_TOKEN);
  await runtime.identityLinks.load(db);
  const linksTimer = setInterval(() => runtime.identityLinks.load(db).catch((err) => runtime.log.warn("could not reread linked identities", { err })), 60_000);
  linksTimer.unref();
  // Work that outlives its reply (a new context's title) finishes before the process exits.
  const background = new Set<Promise<unknown>>();
  // Share links point at PUBLIC_BASE_URL, else at this server's own address (set once it
  // listens), never at a request's Host header.
  const deps: Deps = {
    background: (work) => {
      background.add(work);
      void work.finally(() => background.delete(work));
    },
    ...runtime,
    db,
    databaseFileProblem,
    clientAddress: nodeClientAddress(config.CLIENT_IP_HEADER),
    readBody: readBodyFromSocket,
    clientGone: clientGoneFromSocket,
    assets: webFilesFrom(webDist),
    baseUrl: `http://localhost:${config.PORT}`,
  };

  // Charges of exchanges a previous run left unfinished (a crash, a kill) are refunded:
  // those already stale now, and the rest once they are, unless a debit got to them first.
  const releaseHolds = () => releaseStaleHolds(deps).catch((err) => runtime.log.error("could not release abandoned credit holds", { err }));
  await releaseHolds();
  setTimeout(releaseHolds, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS).unref();
  // New messages wait to be indexed for search; this indexes them a few times a second.
  const stopIndexing = keepSearchIndexed(deps);
  const app = createApp(() => deps);

  const server = serveNode(app, { port: config.PORT, hostname: process.env.HOST ?? "0.0.0.0" }, (info) => {
    deps.baseUrl = `http://localhost:${info.port}`;
    runtime.log.info("listening", { url: deps.baseUrl, database: databaseUrl.replace(/\?.*$/, "") });
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
    clearInterval(discovery);
    clearInterval(linksTimer);
    stopIndexing();
    server.close(async () => {
      await Promise.allSettled(background);
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

/**
 * Serves the app over HTTP/1.1 on Node, with the socket-level behaviour the Node server
 * promises (see docs/limits-and-errors.md). The tests serve through this too.
 */
export function serveNode(app: App, options: { port: number; hostname: string }, onListening?: (info: AddressInfo) => void): ServerType {
  const server = serve(
    // Node's default of 16 KiB of headers refuses real access tokens: identity providers issue
    // 8–20 KB JWTs when they carry group claims.
    { fetch: app.fetch, port: options.port, hostname: options.hostname, serverOptions: { maxHeaderSize: MAX_HEADER_BYTES } },
    onListening,
  );
  server.on("clientError", answerClientError);
  return server;
}

/**
 * The client's address on Node: the socket's peer, or, behind a reverse proxy that says so
 * in CLIENT_IP_HEADER, the last entry of that header (the one the proxy itself added).
 * X-Forwarded-For and the like are never trusted unless configured: any client can send
 * them. Undefined for a request that came through no socket (app.request in tests).
 */
export function nodeClientAddress(header: string | undefined): (c: Context) => string | undefined {
  return (c) => {
    const forwarded = header ? c.req.header(header)?.split(",").at(-1)?.trim() : undefined;
    if (forwarded) return forwarded;
    return (c.env as { incoming?: unknown } | undefined)?.incoming ? getConnInfo(c).remote.address : undefined;
  };
}

/** All request headers together, the request line included. */
export const MAX_HEADER_BYTES = 64 * 1024;

/**
 * What the HTTP parser refuses never reaches the app, and Node would answer it with a bare
 * status line. Answer with the Error body instead, then close the connection, since the
 * rest of its stream cannot be framed. A reply still in flight for an earlier, complete
 * pipelined request goes first, so that the error is not taken as its answer; a reply
 * already started for the broken request itself cannot be amended, only cut off.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex) {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight && !inFlight.writableFinished && inFlight.req.complete) {
    inFlight.once("close", () => (inFlight.writableFinished ? answerClientError(err, socket) : socket.destroy()));
    return;
  }
  if (err.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "headers_too_large", `the request headers are over the ${MAX_HEADER_BYTES / 1024} KiB limit; send a shorter token, cookie or query string`]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "request_timeout", "the request did not arrive in time"]
        : [400, "Bad Request", "malformed_request", `the request is not valid HTTP/1.1 (${err.code ?? "parse error"}); check its framing and headers`];
  const body = JSON.stringify({ error: status, message, code });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
