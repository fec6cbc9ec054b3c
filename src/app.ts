import type { Context } from "hono";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import type { AppEnv, Deps } from "./deps";
import { ApiError, type ErrorBody } from "./errors";
import { limitBodySize, parseJsonBody } from "./json-body";
import { createRouter } from "./router";
import { chatRoutes } from "./routes/chat";
import { contextRoutes } from "./routes/contexts";
import { creditRoutes } from "./routes/credits";
import { groupRoutes } from "./routes/groups";
import { healthRoutes } from "./routes/health";
import { keyRoutes } from "./routes/keys";
import { meRoutes } from "./routes/me";
import { modelRoutes } from "./routes/models";
import { openAiErrors, openAiRoutes } from "./routes/openai";
import { plantRoutes } from "./routes/plants";
import { shareRoutes } from "./routes/shares";
import { audioRoutes } from "./routes/audio";
import { clientConfigRoutes } from "./routes/client-config";
import { docsRoutes } from "./routes/docs";
import { localLoginRoutes } from "./routes/local-login";
import { serveClientFile, serveClientPage } from "./web-client";

/** How an entry hands each request its dependencies (see src/server.ts, src/worker.ts). */
export type DepsResolver = (c: Context<AppEnv>) => Deps | Promise<Deps>;

/** The whole HTTP service, independent of the runtime it is served from. */
export function createApp(resolveDeps: DepsResolver) {
  const app = createRouter();

  app.use(requestId());
  app.use(async (c, next) => {
    await next();
    // API.md: JSON is `application/json; charset=utf-8`; a 204 has no body, so no type.
    if (c.res.status === 204) c.res.headers.delete("Content-Type");
    else if (c.res.headers.get("Content-Type") === "application/json") {
      c.res.headers.set("Content-Type", "application/json; charset=utf-8");
    }
  });
  app.use(async (c, next) => {
    c.set("deps", await resolveDeps(c));
    await next();
  });
  // Credentials travel in headers, never cookies, so browsers may call from any origin
  // unless CORS_ORIGINS narrows it.
  app.use(
    cors({
      origin: (origin, c: Context<AppEnv>) => {
        const allowed = c.var.deps.config.CORS_ORIGINS;
        return allowed.includes("*") ? "*" : allowed.includes(origin) ? origin : null;
      },
      allowHeaders: ["Authorization", "Content-Type", "X-API-Key", "Idempotency-Key"],
      exposeHeaders: ["X-Request-Id", "X-Credits-Remaining", "X-Credits-Reset", "Retry-After", "Link", "Idempotent-Replayed"],
      maxAge: 86_400,
    }),
  );
  // Registered before the JSON body middleware, which it must not meet: its body is a
  // multipart recording with a limit of its own (src/routes/audio.ts).
  app.route("/", audioRoutes);
  // Before the body parsers, so their errors on /v1 are answered in OpenAI's shape too.
  app.use("/v1/*", openAiErrors);
  app.use(limitBodySize, parseJsonBody);

  app.route("/", healthRoutes);
  app.route("/", plantRoutes);
  app.route("/", meRoutes);
  app.route("/", keyRoutes);
  app.route("/", contextRoutes);
  app.route("/", groupRoutes);
  app.route("/", shareRoutes);
  app.route("/", modelRoutes);
  app.route("/", chatRoutes);
  app.route("/", creditRoutes);
  app.route("/v1", openAiRoutes);
  app.route("/", clientConfigRoutes);
  app.route("/", localLoginRoutes);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An access token (JWT) from the identity provider, or an API key (sk_…)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", { type: "apiKey", in: "header", name: "X-API-Key" });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Plant Store and Assistant Chat",
      version: "1.0.0",
      description: "Plants, chat with language models, contexts, credits and API keys. Errors are `{ error, message }`.",
    },
  });
  app.route("/", docsRoutes);

  const methodsOf = allowedMethods(app.routes);
  // The first segment of every API path: a browser navigation under one of them stays API.
  const apiSegments = new Set(app.routes.map((r) => r.path.split("/")[1] ?? "").filter((s) => s && !s.includes("*")));
  app.notFound(async (c) => {
    // The web client: its files, then (after the API's 405s) its page for navigations.
    const file = await serveClientFile(c);
    if (file) return file;
    const allowed = methodsOf(c.req.path);
    if (allowed.length > 0) {
      return c.json<ErrorBody>(
        { error: 405, message: `${c.req.method} is not supported on ${c.req.path}; use ${allowed.join(", ")}` },
        405,
        { Allow: allowed.join(", ") },
      );
    }
    const page = await serveClientPage(c, apiSegments);
    if (page) return page;
    return c.json<ErrorBody>({ error: 404, message: `no such endpoint: ${c.req.method} ${c.req.path}` }, 404);
  });
  app.onError((err, c) => {
    if (err instanceof ApiError) {
      return c.json<ErrorBody>({ error: err.status, message: err.message }, err.status, err.headers);
    }
    if (err instanceof HTTPException && err.status < 500) {
      return c.json<ErrorBody>({ error: err.status, message: err.message || "bad request" }, err.status);
    }
    const log = c.var.deps?.log ?? console;
    log.error("unhandled error", { requestId: c.var.requestId, method: c.req.method, path: c.req.path, err });
    return c.json<ErrorBody>(
      { error: 500, message: `internal error; quote request id ${c.var.requestId} when reporting it` },
      500,
    );
  });

  return app;
}

export type App = ReturnType<typeof createApp>;

/**
 * The methods the app serves on a path, for a 405 with `Allow` when a path exists but not
 * with the method asked. Built once from the route table (middleware is method "ALL").
 */
function allowedMethods(routes: ReadonlyArray<{ method: string; path: string }>) {
  const table = routes
    .filter((r) => r.method !== "ALL" && !r.path.includes("*"))
    .map((r) => ({ method: r.method, pattern: new RegExp(`^${r.path.replace(/:[^/]+/g, "[^/]+")}/?$`) }));
  return (path: string) => [...new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method))];
}
