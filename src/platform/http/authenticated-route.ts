import { createRoute, type RouteConfig, type z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requireAuth, requireJwt } from "../auth/credentials";
import type { AppEnv } from "../deps";
import type { ErrorStatus } from "./errors";
import { ErrorSchema, errorEntries } from "./error-responses";
import { withJsonBody } from "./json-body-route";

/** Security requirement for endpoints that take a JWT or an API key. */
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }];

type Config = Omit<RouteConfig, "path" | "security" | "middleware">;

/**
 * The statuses any request to this route can meet before its handler: bad credentials
 * (401) and the request limit (429) always; 400 when it takes parameters or a body; and
 * for a method that may carry a body, the body parser's 400, 413 and 415 (a DELETE with a
 * stray non-JSON body is refused like any other).
 */
function statusesBeforeHandler(route: Config): ErrorStatus[] {
  const statuses: ErrorStatus[] = [401, 429];
  const request = route.request ?? {};
  if (request.params || request.query || request.headers || request.body) statuses.push(400);
  if (route.method !== "get" && route.method !== "head") statuses.push(400, 413, 415);
  return statuses;
}

/**
 * A route that needs a JWT or an API key (`jwtOnly`: a JWT, else 403): the security
 * requirement, the authentication middleware and every error status it can answer, so
 * that no route file can list them differently. `errors` adds what the handler answers.
 */
export function authenticatedRoute<P extends string, R extends Config & { path: P }>(
  route: R,
  options: { errors?: ErrorStatus[]; jwtOnly?: boolean; middleware?: MiddlewareHandler<AppEnv>[]; errorSchema?: z.ZodType } = {},
) {
  const { errors = [], jwtOnly = false, middleware = [], errorSchema = ErrorSchema } = options;
  const statuses = [...statusesBeforeHandler(route), ...(jwtOnly ? [403 as const] : []), ...errors];
  return withJsonBody(
    createRoute({
      ...route,
      security,
      middleware: [requireAuth, ...(jwtOnly ? [requireJwt] : []), ...middleware] as [typeof requireAuth],
      responses: { ...errorEntries(statuses, errorSchema), ...route.responses },
    }),
  );
}
