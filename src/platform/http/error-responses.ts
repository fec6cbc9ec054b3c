import { z } from "@hono/zod-openapi";

export const ErrorSchema = z
  .object({
    error: z.number().int().openapi({ example: 404, format: "int32" }),
    message: z.string().openapi({ example: "plant 42 not found" }),
    code: z.string().optional().openapi({
      example: "plant_not_found",
      description: "Stable and machine-readable, for clients that branch on the kind of error (docs/api.md lists them)",
    }),
  })
  .openapi("Error");

const descriptions: Record<number, string> = {
  400: "Bad request: malformed JSON, wrong types, out-of-range values or bad parameters",
  401: "Missing, invalid or expired credentials",
  402: "No chat credits left today",
  403: "This credential may not do this",
  404: "Not found for this caller",
  409: "Conflict",
  413: "Body over the size limit",
  415: "Body is not JSON",
  422: "The Idempotency-Key was already used for a different request",
  429: "Too many requests",
  502: "The upstream model failed",
  503: "A dependency is unavailable: the model (not configured or not reachable), the identity provider, or the database (read-only, or its file deleted)",
  504: "The upstream model timed out",
  500: "Server fault; the reply's X-Request-Id identifies it in the log",
  507: "The server's storage is full: nothing was saved",
};

const headers: Record<number, z.ZodObject> = {
  401: z.object({ "WWW-Authenticate": z.string().openapi({ example: 'Bearer realm="api", error="invalid_token"' }) }),
  402: z.object({ "Retry-After": z.string().openapi({ description: "Seconds until 00:00 UTC", example: "3600" }) }),
  429: z.object({ "Retry-After": z.string().openapi({ description: "Seconds until the limit resets", example: "30" }) }),
};

type ErrorContent = { "application/json": { schema: z.ZodType } };

/**
 * OpenAPI response entries for the given error statuses, all with the error body of the
 * surface (the Error body unless `schema` says otherwise). Any endpoint may answer 500,
 * and 507 (a write it makes, if only a user's first sight, found the disk full).
 */
export function errorEntries(statuses: readonly number[], schema: z.ZodType = ErrorSchema) {
  const all = [...new Set([...statuses, 500, 507])].sort((a, b) => a - b);
  return Object.fromEntries(
    all.map((s) => [
      s,
      {
        description: descriptions[s] ?? "Error",
        content: { "application/json": { schema } },
        ...(headers[s] ? { headers: headers[s] } : {}),
      },
    ]),
  ) as Record<number, { description: string; content: ErrorContent }>;
}

/** The same with the Error body; an endpoint that may answer 401 may also answer 429. */
export function errorResponses(...statuses: number[]) {
  return errorEntries(statuses.includes(401) ? [...statuses, 429] : statuses);
}
