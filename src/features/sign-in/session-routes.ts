import { statusOf } from "../../platform/error-codes";
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { AppEnv, Deps } from "../../platform/deps";
import { DomainError, excerpt } from "../../platform/errors";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { withJsonBody } from "../../platform/http/json-body-route";
import { errorResponses } from "../../platform/http/error-responses";
import { publicOrigin } from "../../platform/http/public-origin";
import { serviceId } from "../../platform/http/service-id";
import { clientKey } from "../../platform/auth/rate-limit";
import type { SessionTokens } from "../../platform/auth/session-tokens";
import { issueWalletNonce } from "./proofs";
import { counted, countSignIn, offeredMethods, proveIdentity, SignInRequest, signUpRequestOf, type SignInBody } from "./sign-in-proof";
import { accountFor } from "./accounts";
import { describeDevice } from "./device";
import { endSessionByToken, REFRESH_GRACE_MS, refreshSession, startSession, type SessionStart } from "./sessions";

/** The refresh token's cookie: HttpOnly, SameSite=Strict, sent only to /auth. */
export const REFRESH_COOKIE = "refresh_token";
const COOKIE_PATH = "/auth";

// --- schemas --------------------------------------------------------------------------------

const AccountSummarySchema = z
  .object({
    id: serviceId("usr", "usr_3q2-7wEjU8n5Rk1vLxZc9A"),
    name: z.string().openapi({ example: "Ada" }),
    avatarUrl: z.string().nullable(),
  })
  .openapi("AccountSummary");

const SessionSchema = z
  .object({
    accessToken: z.string().openapi({ description: "Send as Authorization: Bearer; an ES256 JWT signed by this service" }),
    expiresAt: z.string().openapi({ format: "date-time", description: "When the access token stops working; refresh before" }),
    user: AccountSummarySchema,
  })
  .openapi("Session");

const setsCookie = {
  "Set-Cookie": z.string().openapi({
    description: `The refresh token: \`${REFRESH_COOKIE}=…; Path=${COOKIE_PATH}; HttpOnly; SameSite=Strict; Max-Age=…\`, and \`Secure\` except on http://localhost`,
  }),
};
const sessionReply = { description: "The session's access token, and its refresh token as a cookie", headers: z.object(setsCookie), content: { "application/json": { schema: SessionSchema } } };

// --- HTTP helpers ---------------------------------------------------------------------------

/** The session keys, or a 503 saying what to configure (a Worker deployed without them). */
function sessionTokensOf(deps: Deps): SessionTokens {
  if (!deps.sessionTokens) {
    throw new ApiError("sessions_not_configured", "sign-in sessions are not configured on this server: set SESSION_SIGNING_KEY (npm run session-key prints one)");
  }
  return deps.sessionTokens;
}

/** `Secure` everywhere but on a plain-http loopback origin (development), where browsers would drop it. */
function cookieOptions(deps: Deps, maxAge: number) {
  const { protocol, hostname } = new URL(publicOrigin(deps));
  const loopback = hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]";
  return { path: COOKIE_PATH, httpOnly: true, sameSite: "Strict" as const, secure: !(protocol === "http:" && loopback), maxAge };
}

const clearRefreshCookie = (c: Context<AppEnv>) => setCookie(c, REFRESH_COOKIE, "", cookieOptions(c.get("deps"), 0));

/** Where sessions are kept and ended: the database and this process's copy of the ended ones. */
const storeOf = (deps: Deps) => ({ db: deps.db, endedSessions: deps.endedSessions });

/** Signs the access token, sets the refresh cookie and answers the Session. */
async function answerSession(c: Context<AppEnv>, started: SessionStart) {
  const deps = c.get("deps");
  const { token, expiresAt } = await sessionTokensOf(deps).sign(
    { userId: started.userId, sessionId: started.sessionId, method: started.method },
    { issuer: publicOrigin(deps), now: deps.now(), ttlSeconds: deps.config.SESSION_ACCESS_TOKEN_SECONDS },
  );
  setCookie(c, REFRESH_COOKIE, started.refreshToken, cookieOptions(deps, deps.config.SESSION_IDLE_DAYS * 86_400));
  c.header("Cache-Control", "no-store");
  return c.json({ accessToken: token, expiresAt: expiresAt.toISOString(), user: started.user }, 200);
}

/**
 * Refresh and logout act on the cookie, which the browser attaches whoever asks: they answer
 * only a request whose Origin is the service's own (browsers send Origin on every POST), so
 * no other site's page can use them, and refuse one without it.
 */
const sameOriginOnly = createMiddleware<AppEnv>(async (c, next) => {
  const origin = c.req.header("Origin");
  const expected = publicOrigin(c.get("deps"));
  if (origin !== expected) {
    throw new ApiError(
      "origin_not_allowed",
      origin === undefined
        ? `this request must come from this service's own web page (an Origin header of ${expected})`
        : `requests from ${excerpt(origin)} may not use this service's session cookie; only ${expected} may`,
    );
  }
  await next();
});

// --- routes -----------------------------------------------------------------------------------

const walletNonce = createRoute({
  method: "post",
  path: "/auth/wallet/nonce",
  tags: ["sign-in"],
  summary: "A single-use nonce for a Sign-In with Ethereum message",
  description: "Lives five minutes and serves one sign-in. 404 where wallet sign-in is turned off (WALLET_SIGN_IN=off).",
  responses: {
    200: {
      description: "The nonce to put in the EIP-4361 message's `Nonce:` line",
      content: {
        "application/json": {
          schema: z
            .object({ nonce: z.string().openapi({ example: "9f86d081884c7d659a2feaa0c55ad015" }), expiresAt: z.string().openapi({ format: "date-time" }) })
            .openapi("WalletNonce"),
        },
      },
    },
    ...errorResponses(400, 404, 413, 415, 429),
  },
});

const createSession = withJsonBody(createRoute({
  method: "post",
  path: "/auth/session",
  tags: ["sign-in"],
  summary: "Sign in: trade one proof of identity for a session",
  description:
    "Takes a Sign-In with Ethereum message and its signature, a token of the configured identity provider, or (local login) a name. " +
    "Answers a short-lived access token and sets the session's refresh cookie. A proof that does not hold is a 401 with a specific code. " +
    "A new account may need `inviteCode` (SIGN_UP=invite) or `turnstileToken` (Turnstile configured), and is refused where sign-up is closed (403) " +
    "or past SIGN_UPS_PER_ADDRESS_PER_HOUR (429 sign_up_limited); successful sign-ins are limited too (429 too_many_sign_ins).",
  request: { body: { required: true, content: { "application/json": { schema: SignInRequest } } } },
  responses: { 200: sessionReply, ...errorResponses(400, 401, 403, 413, 415, 429, 503) },
}));

const refresh = createRoute({
  method: "post",
  path: "/auth/refresh",
  tags: ["sign-in"],
  summary: "A new access token for the session in the refresh cookie, whose token is replaced",
  description:
    "Only from the service's own origin (Origin header). A refresh token used a second time ends its session (401 refresh_token_reused), " +
    `except once within ${REFRESH_GRACE_MS / 1000} s of its replacement while the token that replaced it is unused (a refresh whose reply never arrived): that is answered as a refresh.`,
  middleware: [sameOriginOnly] as const,
  responses: { 200: sessionReply, ...errorResponses(400, 401, 403, 413, 415, 503) },
});

const logout = createRoute({
  method: "post",
  path: "/auth/logout",
  tags: ["sign-in"],
  summary: "Sign out: end the session in the refresh cookie and clear it",
  description: "Only from the service's own origin (Origin header). Answers 204 with or without a session.",
  middleware: [sameOriginOnly] as const,
  responses: { 204: { description: "Signed out; the cookie is cleared", headers: z.object(setsCookie) }, ...errorResponses(400, 403, 413, 415) },
});

const jwks = createRoute({
  method: "get",
  path: "/.well-known/jwks.json",
  tags: ["sign-in"],
  summary: "The public keys of the service's session access tokens",
  responses: {
    200: {
      description: "A JWK Set",
      content: {
        "application/json": {
          schema: z
            .object({
              keys: z.array(
                z.object({ kty: z.string(), crv: z.string(), x: z.string(), y: z.string(), kid: z.string(), alg: z.string(), use: z.string() }),
              ),
            })
            .openapi("JsonWebKeySet"),
        },
      },
    },
    ...errorResponses(),
  },
});

export const sessionRoutes = createRouter()
  .openapi(walletNonce, async (c) => {
    const deps = c.get("deps");
    if (!offeredMethods(deps).wallet) throw new ApiError("not_found", `no such endpoint: ${c.req.method} ${c.req.path} (wallet sign-in is turned off here)`);
    // Each nonce is a row: a client may ask for as many as its requests per minute allow.
    const client = deps.clientAddress?.(c);
    if (client) {
      const verdict = deps.rateLimiter.take(`wallet-nonce:${clientKey(client)}`, deps.now());
      if (!verdict.ok) {
        throw new ApiError("rate_limited", `too many sign-in nonces asked from this address; retry in ${verdict.retryAfterSeconds} s`, {
          headers: { "Retry-After": String(verdict.retryAfterSeconds) },
        });
      }
    }
    const { nonce, expiresAt } = await issueWalletNonce(deps.db, deps.now());
    c.header("Cache-Control", "no-store");
    return c.json({ nonce, expiresAt: expiresAt.toISOString() }, 200);
  })
  .openapi(createSession, async (c) => {
    const deps = c.get("deps");
    sessionTokensOf(deps);
    const body = c.req.valid("json") as SignInBody;
    const identity = await proveIdentity(c, body);
    const now = deps.now();
    const { userId, prepare } = await accountFor(deps, identity, now, signUpRequestOf(c, body));
    await countSignIn(c, identity);
    const device = describeDevice(c.req.header("User-Agent"));
    const { SESSION_ACCESS_TOKEN_SECONDS: ttlSeconds, SESSIONS_PER_USER: maxSessions } = deps.config;
    return answerSession(c, await startSession(storeOf(deps), { userId, identity, method: identity.method, device, now, prepare, ttlSeconds, maxSessions }));
  })
  .openapi(refresh, async (c) => {
    const deps = c.get("deps");
    sessionTokensOf(deps);
    const token = getCookie(c, REFRESH_COOKIE);
    let started: SessionStart;
    try {
      if (!token) {
        throw new DomainError("refresh_token_missing", "no session to refresh (no refresh cookie): sign in");
      }
      const idleMs = deps.config.SESSION_IDLE_DAYS * 86_400_000;
      const refreshed = await counted(c, () => refreshSession(storeOf(deps), token, { now: deps.now(), idleMs, ttlSeconds: deps.config.SESSION_ACCESS_TOKEN_SECONDS }));
      // Rare for a browser (a reload or lost signal mid-refresh); many would say something is off.
      if (refreshed.graced) deps.log.info("a refresh token was presented again within its grace period and answered", { sessionId: refreshed.sessionId });
      started = refreshed;
    } catch (err) {
      // A spent or unknown token is of no use to keep.
      if (err instanceof DomainError && statusOf(err.code) === 401) clearRefreshCookie(c);
      throw err;
    }
    return answerSession(c, started);
  })
  .openapi(logout, async (c) => {
    const deps = c.get("deps");
    const token = getCookie(c, REFRESH_COOKIE);
    if (token) await endSessionByToken(storeOf(deps), token, deps.now());
    clearRefreshCookie(c);
    return c.body(null, 204);
  })
  .openapi(jwks, (c) => {
    c.header("Cache-Control", "public, max-age=300");
    return c.json(c.get("deps").sessionTokens?.jwks ?? { keys: [] }, 200);
  });

