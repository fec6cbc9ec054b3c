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
import { DisplayName } from "../../platform/http/display-name";
import { publicOrigin } from "../../platform/http/public-origin";
import { serviceId } from "../../platform/http/service-id";
import { countFailedAuthentication } from "../../platform/auth/credentials";
import { clientKey } from "../../platform/auth/rate-limit";
import type { SessionTokens } from "../../platform/auth/session-tokens";
import { issueWalletNonce, proveLocalName, proveProviderToken, proveWallet, type ProvenIdentity } from "./proofs";
import { accountFor } from "./accounts";
import type { SignUpRequest } from "./sign-up";
import { describeDevice } from "./device";
import { endSessionByToken, refreshSession, startSession, type SessionStart } from "./sessions";

/** The refresh token's cookie: HttpOnly, SameSite=Strict, sent only to /auth. */
export const REFRESH_COOKIE = "refresh_token";
const COOKIE_PATH = "/auth";

// --- schemas --------------------------------------------------------------------------------

const Token = z.string().min(1).max(65_536);

const WalletProof = z
  .strictObject({
    message: z.string().min(1).max(8192).openapi({ description: "The EIP-4361 message, exactly as the wallet signed it" }),
    signature: z.string().min(1).max(65_536).openapi({ description: "The wallet's signature (personal_sign), 0x-prefixed hex", example: "0x4b1f…" }),
  })
  .openapi("WalletProof");

const proofOptions = {
  wallet: z.strictObject({ wallet: WalletProof }),
  idToken: z.strictObject({ idToken: Token.openapi({ description: "An ID token of the configured identity provider" }) }),
  accessToken: z.strictObject({ accessToken: Token.openapi({ description: "An access token of the configured identity provider" }) }),
  local: z.strictObject({ local: z.strictObject({ name: DisplayName.openapi({ example: "alice" }) }) }),
};
const PROOF_SHAPES = "{ wallet: { message, signature } }, { idToken }, { accessToken } or { local: { name } }";

/** What a sign-in may bring beside its proof, for a new account (sign-up.ts). */
const signUpFields = {
  inviteCode: z.string().min(1).max(200).optional().openapi({ description: "An invite code, for a new account where sign-up is by invite (SIGN_UP=invite)" }),
  turnstileToken: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .openapi({ description: "The Cloudflare Turnstile widget's token, for a new account where Turnstile is configured (`signUp.turnstileSiteKey` in /client-config)" }),
};

/**
 * Exactly one proof of identity (with `extra`, the fields a sign-in may bring beside it). A
 * body that is none of them is told which one it looks like and what is wrong with it,
 * rather than zod's "invalid input".
 */
function proofSchema<E extends z.ZodRawShape>(extra: E) {
  const options = {
    wallet: proofOptions.wallet.extend(extra),
    idToken: proofOptions.idToken.extend(extra),
    accessToken: proofOptions.accessToken.extend(extra),
    local: proofOptions.local.extend(extra),
  };
  return z.union([options.wallet, options.idToken, options.accessToken, options.local], {
    error: (issue) => {
      const input = issue.input;
      const keys = input && typeof input === "object" && !Array.isArray(input) ? Object.keys(input).filter((k) => !(k in extra)) : [];
      const option = keys.length === 1 ? options[keys[0] as keyof typeof options] : undefined;
      if (!option) return `must be exactly one of ${PROOF_SHAPES}`;
      const problem = option.safeParse(input).error?.issues[0];
      return problem ? `${problem.path.map((p) => excerpt(String(p))).join(".")}: ${problem.message}` : `must be exactly one of ${PROOF_SHAPES}`;
    },
  });
}

const proofExample = { wallet: { message: "localhost:8787 wants you to sign in with your Ethereum account:\n0x…", signature: "0x…" } };

export const SignInProof = proofSchema({}).openapi("SignInProof", { description: `One proof of identity: ${PROOF_SHAPES}`, example: proofExample });

/** POST /auth/session's body: a proof, and for a new account what the sign-up policy asks for. */
const SignInRequest = proofSchema(signUpFields).openapi("SignInRequest", {
  description: `One proof of identity: ${PROOF_SHAPES}; with \`inviteCode\` and \`turnstileToken\` beside it when a new account needs them`,
  example: proofExample,
});

type Proof = { wallet: { message: string; signature: string } } | { idToken: string } | { accessToken: string } | { local: { name: string } };
type SignInBody = Proof & { inviteCode?: string; turnstileToken?: string };

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

/** Runs a proof check; a refused one counts against the client's address like a bad credential. */
async function counted<T>(c: Context<AppEnv>, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof DomainError && statusOf(err.code) === 401) await countFailedAuthentication(c);
    throw err;
  }
}

/** The sign-in methods this deployment offers. */
export function offeredMethods(deps: Deps): { wallet: boolean; provider: boolean; local: boolean } {
  return {
    wallet: deps.config.WALLET_SIGN_IN === "on",
    provider: !deps.localLogin,
    local: Boolean(deps.localLogin),
  };
}

/** Checks one proof, with the method it names offered here, and says whose it is. */
export async function proveIdentity(c: Context<AppEnv>, proof: Proof): Promise<ProvenIdentity> {
  const deps = c.get("deps");
  const offered = offeredMethods(deps);
  const notOffered = (what: string) => {
    const names = [offered.wallet && "wallet", offered.provider && "idToken or accessToken", offered.local && "local"].filter(Boolean);
    return new DomainError("sign_in_method_not_offered", `this server does not offer ${what}; it offers: ${names.join(", ") || "nothing"}`);
  };
  if ("wallet" in proof) {
    if (!offered.wallet) throw notOffered("wallet sign-in");
    const { message, signature } = proof.wallet;
    return counted(c, () =>
      proveWallet({ db: deps.db, now: deps.now(), origin: publicOrigin(deps), contractWallets: deps.contractWallets }, message, signature),
    );
  }
  if ("local" in proof) {
    if (!offered.local) throw notOffered("local login");
    refuseRemoteLocalLogin(c);
    return proveLocalName(proof.local.name);
  }
  if (!offered.provider) throw notOffered("an identity provider (it runs in local-login mode)");
  if ("idToken" in proof) {
    // An ID token is for the client (OpenID Connect: the client id), not for the API.
    const audience = deps.config.AUTH_OIDC_ISSUER ? deps.config.AUTH_OIDC_CLIENT_ID : deps.config.AUTH_AUDIENCE;
    return counted(c, () => proveProviderToken(deps.verifyJwt, proof.idToken, audience));
  }
  return counted(c, () => proveProviderToken(deps.verifyJwt, proof.accessToken));
}

/**
 * Local login takes a bare name as proof, so it is for this machine only: a name from any
 * other address is refused unless the operator set LOCAL_LOGIN=network. A request from no
 * socket (in-process: tests) has no address and is not refused. Behind a reverse proxy on
 * this machine, every client looks like loopback unless CLIENT_IP_HEADER names the proxy's header.
 */
export function refuseRemoteLocalLogin(c: Context<AppEnv>): void {
  const deps = c.get("deps");
  if (deps.config.LOCAL_LOGIN === "network") return;
  const address = deps.clientAddress?.(c);
  if (address === undefined || isLoopback(address)) return;
  throw new DomainError(
    "local_login_loopback_only",
    "signing in with a name works only on the machine this server runs on (it has no identity provider): open it there, or ask its operator to set LOCAL_LOGIN=network or configure an identity provider",
  );
}

/** 127.0.0.0/8 and ::1, also written as IPv4-mapped IPv6. */
export function isLoopback(address: string): boolean {
  const plain = address.toLowerCase().replace(/^::ffff:(?=\d+\.)/, "");
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(plain) || plain === "::1" || plain === "0:0:0:0:0:0:0:1";
}

/**
 * Counts a successful sign-in against the client's address and the identity: past either
 * limit (SIGN_INS_PER_*_PER_MINUTE; on Workers the SIGN_IN_*_LIMITER bindings) it is refused,
 * 429 with Retry-After. Proofs that fail are limited apart (AUTH_FAILURES_PER_MINUTE).
 */
export async function countSignIn(c: Context<AppEnv>, identity: { issuer: string; subject: string }): Promise<void> {
  const { signInLimiters, clientAddress, now } = c.get("deps");
  const address = clientAddress?.(c);
  const at = now();
  const [byAddress, byIdentity] = await Promise.all([
    address ? signInLimiters.address.take(`sign-in:${clientKey(address)}`, at) : { ok: true as const },
    signInLimiters.identity.take(`sign-in:${identity.issuer}\u0000${identity.subject}`, at),
  ]);
  const refused = !byAddress.ok ? byAddress : !byIdentity.ok ? byIdentity : undefined;
  if (!refused) return;
  throw new DomainError(
    "too_many_sign_ins",
    `too many sign-ins ${!byAddress.ok ? "from this address" : "to this account"} in the last minute: retry in ${refused.retryAfterSeconds} s (a signed-in page renews its session without signing in again)`,
    { retryAfterSeconds: refused.retryAfterSeconds },
  );
}

/** What a new account needs from this request (sign-up.ts). */
export function signUpRequestOf(c: Context<AppEnv>, body: { inviteCode?: string; turnstileToken?: string }): SignUpRequest {
  return { clientAddress: c.get("deps").clientAddress?.(c), inviteCode: body.inviteCode, turnstileToken: body.turnstileToken };
}

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
    "Only from the service's own origin (Origin header). A refresh token used a second time ends its session (401 refresh_token_reused).",
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
      started = await counted(c, () => refreshSession(storeOf(deps), token, { now: deps.now(), idleMs, ttlSeconds: deps.config.SESSION_ACCESS_TOKEN_SECONDS }));
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

