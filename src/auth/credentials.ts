import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../deps";
import { ApiError } from "../errors";
import { findApiKey, isApiKey, touchApiKey } from "./api-keys";
import { userIdFor } from "./identity";
import { DiscoveryError, InvalidTokenError, type Identity } from "./jwt";

/** Who is calling, and with what. */
export type Principal =
  | { via: "jwt"; userId: string; identity: Identity }
  | { via: "api-key"; userId: string; keyId: string };

/**
 * A 401 with its RFC 6750 challenge: no error code when no credential came, else
 * `invalid_request` (malformed) or `invalid_token` (refused), so clients know to re-login.
 */
function unauthorized(message: string, error?: "invalid_request" | "invalid_token"): ApiError {
  const challenge = error ? `Bearer realm="api", error="${error}"` : 'Bearer realm="api"';
  return new ApiError(401, message, { "WWW-Authenticate": challenge });
}

/**
 * Accepts an identity-provider JWT (`Authorization: Bearer <jwt>`) or an API key
 * (`X-API-Key: <key>` or `Authorization: Bearer sk_…`). A JWT costs no database round
 * trip; an API key costs one indexed read.
 */
export const requireAuth = createMiddleware<AppEnv>(async (c, next) => {
  const { db, verifyJwt, now, log, rateLimiter } = c.var.deps;
  const credential = readCredential(c.req.header("X-API-Key"), c.req.header("Authorization"));

  let key: Awaited<ReturnType<typeof findApiKey>> = null;
  if (credential.kind === "api-key") {
    key = await findApiKey(db, credential.value);
    if (!key) throw unauthorized("the API key is invalid or has been revoked", "invalid_token");
    c.set("principal", { via: "api-key", userId: key.userId, keyId: key.keyId });
  } else {
    let identity: Identity;
    try {
      identity = await verifyJwt(credential.value);
    } catch (err) {
      if (err instanceof InvalidTokenError) throw unauthorized(err.message, "invalid_token");
      if (err instanceof DiscoveryError) throw new ApiError(503, err.message, { "Retry-After": "10" });
      throw err;
    }
    c.set("principal", { via: "jwt", userId: await userIdFor(identity.issuer, identity.subject), identity });
  }

  const verdict = rateLimiter.take(c.var.principal.userId, now());
  if (!verdict.ok) {
    throw new ApiError(
      429,
      `too many requests: at most ${rateLimiter.perMinute} a minute per user; retry in ${verdict.retryAfterSeconds} s`,
      { "Retry-After": String(verdict.retryAfterSeconds) },
    );
  }

  if (key) {
    const { keyId } = key;
    const touched = touchApiKey(db, key, now()).catch((err) => log.warn("could not record API key use", { keyId, err }));
    if (!waitUntil(c, touched)) {
      // On Node the write runs alongside the handler and is awaited before the reply, so a
      // key's lastUsedAt is settled by the time its caller can ask for it (GET /keys).
      await next();
      await touched;
      return;
    }
  }
  await next();
});

/** For what only a signed-in person may do (managing API keys): an API key gets 403. */
export const requireJwt = createMiddleware<AppEnv>(async (c, next) => {
  if (c.var.principal?.via !== "jwt") {
    throw new ApiError(403, "API keys cannot manage API keys; sign in with your identity provider's access token");
  }
  await next();
});

function readCredential(apiKeyHeader: string | undefined, authorization: string | undefined) {
  if (apiKeyHeader !== undefined) {
    const value = apiKeyHeader.trim();
    if (!isApiKey(value)) throw unauthorized("the X-API-Key header does not hold an API key (they start with sk_)", "invalid_request");
    return { kind: "api-key" as const, value };
  }
  if (authorization === undefined) {
    throw unauthorized("authentication required: log in and send 'Authorization: Bearer <token>', or provide an API key in X-API-Key");
  }
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  if (!match) throw unauthorized("the Authorization header must be 'Bearer <token>'", "invalid_request");
  const value = match[1]!;
  return { kind: isApiKey(value) ? ("api-key" as const) : ("jwt" as const), value };
}

/** Lets work outlive the reply with Workers' waitUntil; false where there is none (Node). */
function waitUntil(c: { executionCtx: { waitUntil(p: Promise<unknown>): void } }, promise: Promise<unknown>): boolean {
  let ctx: { waitUntil(p: Promise<unknown>): void };
  try {
    ctx = c.executionCtx;
  } catch {
    return false; // No ExecutionContext outside Workers.
  }
  ctx.waitUntil(promise);
  return true;
}
