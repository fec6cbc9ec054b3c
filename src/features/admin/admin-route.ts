import type { RouteConfig } from "@hono/zod-openapi";
import { requireAdmin } from "../../platform/auth/admin-check";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import type { ErrorStatus } from "../../platform/http/errors";

type Config = Omit<RouteConfig, "path" | "security" | "middleware">;

/** A route of the operator's console: authenticated, then 403 `admin_only` for anyone ADMINS does not name (API keys included). */
export function adminRoute<P extends string, R extends Config & { path: P }>(route: R, errors: ErrorStatus[] = []) {
  return authenticatedRoute({ ...route, tags: ["admin"] }, { middleware: [requireAdmin], errors: [403, ...errors] });
}
