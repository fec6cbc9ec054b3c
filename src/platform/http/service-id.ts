import { z } from "@hono/zod-openapi";

/**
 * An id this service made (`ctx_…`, `grp_…`): its prefix and 16 random bytes in base64url,
 * as documented in replies. Requests take any 1..100 characters and answer 404 for what is
 * none of the caller's, so only replies carry the pattern.
 */
export function serviceId(prefix: "att" | "ctx" | "grp" | "idn" | "key" | "msg" | "ses" | "shr" | "usr", example: string) {
  return z.string().openapi({ pattern: `^${prefix}_[A-Za-z0-9_-]{22}$`, example });
}

/** An id in a request (`ctx_…`, `grp_…`): anything up to 100 characters is looked up, and is 404 if it is none. */
export const Id = z.string().min(1).max(100);
