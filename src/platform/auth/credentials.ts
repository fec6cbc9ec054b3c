import type { SessionClaims } from "./session-tokens";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../deps";
import { ApiError } from "../http/errors";
import { waitUntil } from "../wait-until";
import { findApiKey, isApiKey, touchApiKey, type ApiKeyOwner } from "./api-keys";
import type { Principal } from "./principal";
import { clientKey } from "./rate-limit";
import { InvalidTokenError, KeysUnavailable, type Identity } from "./jwt";
import { publicOrigin } from "../http/public-origin";
import type { Deps } from "../deps";
import { suspendedMessage } from "./suspended-accounts";

/**
 * A 401 with its RFC 6750 challenge: no error code when no credential came, else
 * `invalid_request` (malformed) or `invalid_token` (refused), so clients know to re-login.
 */
function unauthorized(message: string, error?: "invalid_request" | "invalid_token"): ApiError {
  const challenge = error ? `Bearer realm="api", error="${error}"` : 'Bearer realm="api"';
  return new ApiError("unauthenticated", message, { headers: { "WWW-Authenticate": challenge } });
}

/**
 * Accepts a session access token or an identity-provider JWT (`Authorization: Bearer
 * <jwt>`), or an API key (`X-API-Key: <key>` or `Authorization: Bearer sk_…`). A JWT costs
 * no database round trip (but for a process's first, which reads the linked identities,
 * see identity-links.ts); an API key costs one indexed read.
 */
export const requireAuth = createMiddleware<AppEnv>(async (c, next) => {
  const deps = c.get("deps");
  let key: ApiKeyOwner | null = null;
  try {
    const credential = readCredential(c.req.header("X-API-Key"), c.req.header("Authorization"));
    if (credential.kind === "api-key") {
      key = await liveApiKey(deps, credential.value);
      c.set("principal", { via: "api-key", userId: key.userId, keyId: key.keyId, limits: { dailyCreditLimit: key.dailyCreditLimit, models: key.models } });
    } else if (deps.sessionTokens?.isSessionToken(credential.value)) {
      c.set("principal", await sessionPrincipal(deps, credential.value));
    } else {
      c.set("principal", await identityProviderPrincipal(deps, credential.value, (work) => void waitUntil(c, work)));
    }
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) await countFailure(c);
    throw err;
  }
  limitRate(deps, c.get("principal").userId);

  if (key) {
    const { keyId } = key;
    const touched = touchApiKey(deps.db, key, deps.now()).catch((err) => deps.log.warn("could not record API key use", { keyId, err }));
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

/** The key with this secret, if it is live and its account is not suspended; else the refusal. */
async function liveApiKey(deps: Deps, secret: string): Promise<ApiKeyOwner> {
  const key = await findApiKey(deps.db, secret);
  if (!key) throw unauthorized("the API key is invalid or has been revoked", "invalid_token");
  if (key.suspendedAt) throw new ApiError("account_suspended", suspendedMessage(key.suspendedReason));
  if (key.expiresAt && key.expiresAt.getTime() <= deps.now().getTime()) {
    throw new ApiError("api_key_expired", `this API key expired at ${key.expiresAt.toISOString()}: create a new one (POST /keys)`, {
      headers: { "WWW-Authenticate": 'Bearer realm="api", error="invalid_token"' },
    });
  }
  return key;
}

/** Who a session access token speaks for, unless it is refused, its account suspended or its session ended. */
async function sessionPrincipal(deps: Deps, token: string): Promise<Principal> {
  let claims: SessionClaims;
  try {
    claims = await deps.sessionTokens!.verify(token, { issuer: publicOrigin(deps), now: deps.now() });
  } catch (err) {
    if (err instanceof InvalidTokenError) throw unauthorized(err.message, "invalid_token");
    throw err;
  }
  await refuseSuspended(deps, claims.userId);
  // On Node an answer from memory (no round trip); a Worker isolate reads the rows when its copy is old.
  const ended = deps.endedSessions.isEnded(deps.db, claims.sessionId, deps.now());
  if (ended === true || (ended !== false && (await ended))) {
    throw unauthorized("this session has ended (signed out, or ended from another device): sign in again", "invalid_token");
  }
  return { via: "session", userId: claims.userId, sessionId: claims.sessionId, method: claims.method };
}

/**
 * Who an identity provider's JWT speaks for: the account its identity is linked to, unless
 * that link was removed, there is no account where sign-up is not open, or it is suspended.
 * `background` keeps work that outlives the request (a first link's write).
 */
async function identityProviderPrincipal(deps: Deps, jwt: string, background: (work: Promise<unknown>) => void): Promise<Principal> {
  let identity: Identity;
  try {
    identity = await deps.verifyJwt(jwt);
  } catch (err) {
    if (err instanceof InvalidTokenError) throw unauthorized(err.message, "invalid_token");
    if (err instanceof KeysUnavailable) throw new ApiError("identity_provider_unavailable", err.message, { headers: { "Retry-After": "10" } });
    throw err;
  }
  const userId = await deps.identityLinks.accountOf(deps.db, identity.issuer, identity.subject, background);
  if (userId === null) {
    throw unauthorized("this sign-in method was removed from its account: sign in with it to start a new account, or add it to an account again", "invalid_token");
  }
  // Where sign-up is not open, a token's first write must not make an account.
  if (deps.config.SIGN_UP !== "open" && !(await deps.knownAccounts.exists(deps.db, userId, deps.now()))) {
    throw new ApiError(deps.config.SIGN_UP === "invite" ? "invite_required" : "sign_up_closed", noAccountMessage(deps.config.SIGN_UP));
  }
  await refuseSuspended(deps, userId);
  return { via: "jwt", userId, identity };
}

/** 429 rate_limited past the per-user requests a minute. */
function limitRate(deps: Deps, userId: string): void {
  const verdict = deps.rateLimiter.take(userId, deps.now());
  if (!verdict.ok) {
    throw new ApiError(
      "rate_limited",
      `too many requests: at most ${deps.rateLimiter.perMinute} a minute per user; retry in ${verdict.retryAfterSeconds} s`,
      { headers: { "Retry-After": String(verdict.retryAfterSeconds) } },
    );
  }
}

/**
 * Counts a refused credential against the client's address, and answers 429 instead of
 * 401 past AUTH_FAILURES_PER_MINUTE. Only failures count, so whoever holds a valid
 * credential is never slowed by what others at the same address get wrong; a request with
 * no credential at all is not a failure (a browser before login).
 */
async function countFailure(c: Context<AppEnv>): Promise<void> {
  if (c.req.header("X-API-Key") === undefined && c.req.header("Authorization") === undefined) return;
  await countFailedAuthentication(c);
}

/**
 * Counts a refused proof of identity (a bad credential, a wallet signature that does not
 * hold, a spent refresh token) against the client's address: past AUTH_FAILURES_PER_MINUTE
 * it throws the 429 to answer instead.
 */
export async function countFailedAuthentication(c: Context<AppEnv>): Promise<void> {
  const { authFailureLimiter, clientAddress, now } = c.get("deps");
  const client = clientAddress?.(c);
  if (!client) return;
  const verdict = await authFailureLimiter.take(clientKey(client), now());
  if (!verdict.ok) {
    throw new ApiError(
      "too_many_failed_authentications",
      `too many failed authentications from this address; check the credential, then retry in ${verdict.retryAfterSeconds} s`,
      {  headers: { "Retry-After": String(verdict.retryAfterSeconds) } },
    );
  }
}

/** 403 account_suspended for a suspended account: from the process's copy, no round trip on Node. */
async function refuseSuspended(deps: Deps, userId: string): Promise<void> {
  const found = deps.suspendedAccounts.suspension(deps.db, userId, deps.now());
  const suspension = found instanceof Promise ? await found : found;
  if (suspension) throw new ApiError("account_suspended", suspendedMessage(suspension.reason));
}

function noAccountMessage(policy: "invite" | "closed"): string {
  return policy === "invite"
    ? "this identity has no account here, and new accounts need an invite: sign up with an invite code (POST /auth/session with inviteCode), then use this token"
    : "this identity has no account here, and this service is not taking new accounts: only existing accounts sign in";
}

/**
 * For a public endpoint that says more to a caller it knows (GET /models: the caller's
 * plan): without credentials it runs as it does for anyone; with them, as requireAuth.
 */
export const optionalAuth = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header("X-API-Key") === undefined && c.req.header("Authorization") === undefined) return next();
  return requireAuth(c, next);
});

/** For what only a signed-in person may do (managing API keys, sessions, sign-in methods): an API key gets 403. */
export const requireJwt = createMiddleware<AppEnv>(async (c, next) => {
  if (c.get("principal")?.via === "api-key") {
    throw new ApiError("api_key_not_allowed", "API keys cannot manage API keys, sessions or sign-in methods; sign in and use your session's or identity provider's access token");
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
