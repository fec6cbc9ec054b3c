import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { matchedRoutes } from "hono/route";
import type { AppEnv, Deps } from "./platform/deps";
import { noMetrics } from "./platform/metrics";
import { ApiError } from "./platform/http/errors";
import { errorBody, toHttpError } from "./platform/http/error-mapper";
import { excerpt } from "./platform/errors";
import { readJsonBody } from "./platform/http/json-body";
import { documentJsonBodies } from "./platform/http/json-body-route";
import { createRouter } from "./platform/http/router";
import { chatRoutes } from "./features/chat/send-routes";
import { replyRoutes } from "./features/chat/reply-routes";
import { contextRoutes } from "./features/contexts/contexts-routes";
import { creditRoutes } from "./features/account/credits-routes";
import { groupRoutes } from "./features/contexts/groups-routes";
import { healthRoutes } from "./features/operations/health-routes";
import { metricsRoutes } from "./features/operations/metrics-routes";
import { keyRoutes } from "./features/account/keys-routes";
import { meRoutes } from "./features/account/me-routes";
import { modelRoutes } from "./features/chat/models-routes";
import { openAiError, openAiRoutes } from "./features/chat/openai-routes";
import { plantRoutes } from "./features/plants/plants-routes";
import { shareRoutes } from "./features/contexts/shares-routes";
import { exportRoutes, importRoutes } from "./features/contexts/transfer-routes";
import { audioRoutes } from "./features/voice/transcription-routes";
import { attachmentRoutes } from "./features/attachments/attachments-routes";
import { clientConfigRoutes } from "./features/sign-in/client-config-routes";
import { docsRoutes } from "./features/operations/docs-routes";
import { localLoginRoutes } from "./features/sign-in/local-login-routes";
import { sessionRoutes } from "./features/sign-in/session-routes";
import { deviceRoutes } from "./features/sign-in/devices-routes";
import { identityRoutes } from "./features/sign-in/identities-routes";
import { serveClientFile, serveClientPage } from "./platform/http/web-client";
import { peopleRoutes } from "./features/admin/people-routes";
import { auditRoutes } from "./features/admin/audit-routes";
import { inviteRoutes } from "./features/admin/invites-routes";
import { usageRoutes } from "./features/admin/usage-routes";
import { planRoutes } from "./features/admin/plans-routes";

/** How an entry hands each request its dependencies (see src/server.ts, src/worker.ts). */
export type DepsResolver = (c: Context<AppEnv>) => Deps | Promise<Deps>;

/**
 * The whole HTTP service, independent of the runtime it is served from. `compression`: the
 * Node entry's, around every reply (the Worker's are compressed at Cloudflare's edge).
 */
export function createApp(resolveDeps: DepsResolver, options: { compression?: MiddlewareHandler } = {}) {
  const app = createRouter();

  if (options.compression) app.use(options.compression);
  app.use(requestId());
  app.use(dependenciesAndCors(resolveDeps));
  // Before any route sees the request: PATCH /contexts/search must not reach /contexts/{id}.
  // A middleware of its own, so that its 405 is a reply by the time CORS adds its headers.
  const refuseOtherMethods = methodNotAllowed(() => app.routes);
  app.use((c, next) => {
    refuseOtherMethods(c);
    return next();
  });
  // Registered before the JSON body middleware, which it must not meet: its body is a
  // multipart recording with a limit of its own (src/features/voice/transcription-routes.ts).
  app.route("/", audioRoutes);
  // The same for an import: a file of up to 10 MiB (src/features/contexts/transfer-routes.ts).
  app.route("/", importRoutes);
  // And for an upload: one file of up to MAX_DOCUMENT_BYTES (src/features/attachments/attachments-routes.ts).
  app.route("/", attachmentRoutes);
  app.use((c, next) => (mayHaveBody(c.req.method) ? readJsonBody(c, next) : next()));

  app.route("/", healthRoutes);
  app.route("/", metricsRoutes);
  app.route("/", plantRoutes);
  app.route("/", meRoutes);
  app.route("/", keyRoutes);
  app.route("/", contextRoutes);
  app.route("/", groupRoutes);
  app.route("/", shareRoutes);
  app.route("/", exportRoutes);
  app.route("/", modelRoutes);
  app.route("/", chatRoutes);
  app.route("/", replyRoutes);
  app.route("/", creditRoutes);
  app.route("/v1", openAiRoutes);
  app.route("/", clientConfigRoutes);
  app.route("/", localLoginRoutes);
  app.route("/", sessionRoutes);
  app.route("/", deviceRoutes);
  app.route("/", identityRoutes);
  app.route("/", peopleRoutes);
  app.route("/", auditRoutes);
  app.route("/", inviteRoutes);
  app.route("/", usageRoutes);
  app.route("/", planRoutes);

  documentApi(app);
  app.route("/", docsRoutes);

  // The first segment of every API path: a browser navigation under one of them stays API.
  const apiSegments = new Set(app.routes.map((r) => r.path.split("/")[1] ?? "").filter((s) => s && !s.includes("*")));
  app.notFound((c) => serveWebClient(c, apiSegments));
  app.onError(replyWithError);

  return app;
}

/**
 * The dependencies, then CORS, in one middleware: each one more is an async hop on every
 * request. Hono's cors() answers a preflight; on every other request the same headers are
 * set before the handler runs (see corsHeaders).
 */
function dependenciesAndCors(resolveDeps: DepsResolver): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    // Every reply, errors and preflights included: its Content-Type is what it is, never sniffed.
    c.header("X-Content-Type-Options", "nosniff");
    const deps = resolveDeps(c);
    c.set("deps", deps instanceof Promise ? await deps : deps);
    if (c.req.method === "OPTIONS") {
      const res = await preflight(c, next);
      countRequest(c, started, res?.status ?? c.res.status);
      return res;
    }
    corsHeaders(c);
    refuseWritesToALostFile(c);
    await next();
    // docs/api.md labels JSON `application/json; charset=utf-8`; Hono's c.json() says `application/json`.
    if (c.res.headers.get("Content-Type") === "application/json") c.res.headers.set("Content-Type", JSON_UTF8);
    countRequest(c, started, c.res.status);
  };
}

/** The route label of a request no endpoint answered (the web client's files and pages, unknown paths, 405s). */
const NO_ROUTE = "(none)";

/**
 * Reports a request to the metrics by the pattern of the route that answered it (never the
 * raw path, which has ids in it): the one Hono dispatched to last, unless that was a
 * middleware of every path.
 */
function countRequest(c: Context<AppEnv>, started: number, status: number): void {
  const { metrics } = c.get("deps");
  if (metrics === noMetrics) return;
  const route = matchedRoutes(c).at(c.req.routeIndex);
  metrics.request(route && route.method !== "ALL" ? route.path : NO_ROUTE, c.req.method, status, (performance.now() - started) / 1000);
}

/** The document at /openapi.json: the routes' own definitions, the JSON bodies and the security schemes. */
function documentApi(app: OpenAPIHono<AppEnv>): void {
  documentJsonBodies(app);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An access token (JWT) of a session of this service or of the identity provider, or an API key (sk_…)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", { type: "apiKey", in: "header", name: "X-API-Key" });
  app.doc31("/openapi.json", OPENAPI_DOCUMENT);
}

/**
 * The web client: its files, then its page for browser navigations (405s were answered
 * before routing, by methodNotAllowed); anything else is an unknown endpoint.
 */
async function serveWebClient(c: Context<AppEnv>, apiSegments: ReadonlySet<string>): Promise<Response> {
  const file = await serveClientFile(c);
  if (file) return file;
  const page = await serveClientPage(c, apiSegments);
  if (page) return page;
  throw new ApiError("not_found", `no such endpoint: ${c.req.method} ${excerpt(c.req.path)}`);
}

/** Any error as a reply: OpenAI's error shape on /v1, the Error body elsewhere; an unknown error is logged. */
function replyWithError(err: Error, c: Context<AppEnv>): Response {
  const requestId = c.get("requestId");
  const error = toHttpError(err, requestId, (fault) => {
    const log = c.get("deps")?.log ?? console;
    log.error("unhandled error", { requestId, method: c.req.method, path: c.req.path, err: fault });
  });
  if (isOpenAiSurface(c.req.path)) {
    const { status, body } = openAiError(error);
    // A model that is not configured stays so: the SDKs' automatic retries would only repeat it.
    const retry: Record<string, string> = status === 503 ? { "x-should-retry": "false" } : {};
    return c.json(body, status, { ...error.headers, ...retry });
  }
  return c.json(errorBody(error), error.status, error.headers);
}

export type App = ReturnType<typeof createApp>;

/** The head of the document at /openapi.json; the paths and schemas come from the routes. */
export const OPENAPI_DOCUMENT = {
  openapi: "3.1.0",
  info: {
    title: "Plant Store and Assistant Chat",
    version: "1.0.0",
    description:
      "Plants, chat with language models, contexts, credits and API keys. Errors are `{ error, message }` " +
      "(on /v1, OpenAI's `{ error: { message, type, param, code } }`). Request bodies are JSON of at most 1 MiB; " +
      "text fields count characters as Unicode code points and must not contain U+0000. A path asked with a " +
      "method it does not serve answers 405 with `Allow`. See docs/api.md.",
    // OpenAPI 3.1's SPDX `identifier`, which the generator's 3.0-era type does not know.
    license: { name: "MIT", identifier: "MIT" } as { name: string },
  },
};

/** /v1 answers in OpenAI's error shape, everything else in the Error body. */
const isOpenAiSurface = (path: string) => path === "/v1" || path.startsWith("/v1/");

// Credentials travel in headers, never cookies, so browsers may call from any origin
// unless CORS_ORIGINS narrows it.
const corsOptions = {
  origin: (origin: string, c: Context<AppEnv>) => {
    const allowed = c.get("deps").config.CORS_ORIGINS;
    return allowed.includes("*") ? "*" : allowed.includes(origin) ? origin : null;
  },
  allowHeaders: ["Authorization", "Content-Type", "X-API-Key", "Idempotency-Key"],
  exposeHeaders: ["X-Request-Id", "X-Credits-Remaining", "X-Credits-Reset", "Retry-After", "Link", "Idempotent-Replayed", "X-Model"],
  maxAge: 86_400,
};
const preflight = cors(corsOptions);
const exposed = corsOptions.exposeHeaders.join(",");

/**
 * What cors() sets on a reply that is not a preflight, set with c.header() before the
 * handler runs, so that every reply the handler makes with Hono's helpers carries them.
 * cors() itself sets them on `c.res` before the handler (so Hono copies each reply to merge
 * them) and adds Vary after it (a second copy): on Node that makes @hono/node-server build a
 * full WHATWG Response and send it from a stream, ~50 µs of a ~110 µs plant request (CPU of
 * the event loop's thread, measured in one interleaved run; see README, Design notes).
 */
function corsHeaders(c: Context<AppEnv>): void {
  const origin = corsOptions.origin(c.req.header("Origin") ?? "", c);
  if (origin) c.header("Access-Control-Allow-Origin", origin);
  c.header("Access-Control-Expose-Headers", exposed);
  c.header("Vary", "Origin", { append: true });
}

const JSON_UTF8 = "application/json; charset=utf-8";

/** GET and HEAD have no body, and an OPTIONS is answered by the CORS preflight. */
function mayHaveBody(method: string): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "OPTIONS";
}

/**
 * 405 with `Allow` for a path the app serves, asked with a method it does not serve there.
 * A literal route outranks a parameter: /contexts/search is not a context id, so PATCH on
 * it is 405 rather than PATCH /contexts/{id}. Hono's methodNotAllowed middleware decides
 * after routing, when /contexts/{id} has already taken such a request, so this decides
 * before: the check throws the 405. Built from the route table on first use (routes are
 * added after middleware).
 */
function methodNotAllowed(routesOf: () => ReadonlyArray<{ method: string; path: string }>) {
  let literal: Map<string, Set<string>> | undefined;
  let patterns: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  const build = () => {
    literal = new Map();
    const byPattern = new Map<string, Set<string>>();
    for (const { method, path } of routesOf()) {
      if (method === "ALL" || path.includes("*")) continue;
      const table = path.includes(":") ? byPattern : literal;
      const methods = table.get(path) ?? new Set<string>();
      methods.add(method);
      if (method === "GET") methods.add("HEAD");
      table.set(path, methods);
    }
    patterns = [...byPattern].map(([path, methods]) => ({ pattern: new RegExp(`^${path.replace(/:[^/]+/g, "[^/]+")}$`), methods }));
  };
  return (c: Context<AppEnv>): void => {
    if (!literal) build();
    const path = c.req.path;
    const methods = literal!.get(path) ?? new Set(patterns.filter((p) => p.pattern.test(path)).flatMap((p) => [...p.methods]));
    if (methods.size > 0 && !methods.has(c.req.method)) {
      const allow = [...methods].join(", ");
      throw new ApiError("method_not_allowed", `${c.req.method} is not supported on ${excerpt(c.req.path)}; use ${allow}`, { headers: { Allow: allow } });
    }
  };
}

/**
 * Node's embedded file deleted or replaced under the running server: SQLite keeps writing
 * to the open file, which no one will open again, so every write would be acknowledged and
 * lost at the next start. Requests that may write are refused while that lasts (one stat
 * of the file each); reads go on from the open file.
 */
function refuseWritesToALostFile(c: Context<AppEnv>) {
  const { method } = c.req;
  if (method === "GET" || method === "HEAD") return;
  const problem = c.get("deps").databaseFileProblem?.();
  if (!problem) return;
  c.get("deps").log.error("write refused: database file", { requestId: c.get("requestId"), problem });
  throw new ApiError("database_file_lost", "the server's database file was deleted or replaced while it ran: nothing was saved; the operator must restart the server");
}
