import { LiveTexts } from "./live-text";
import { noMetrics, type Metrics } from "./metrics";
import type { Context } from "hono";
import type { Config } from "./config";
import type { BlobStore } from "./blob-store";
import type { Db } from "./db";
import { createJwtVerifier, type JwtKeySource, type JwtVerifier } from "./auth/jwt";
import { createLogger, type Logger } from "./log";
import { createRateLimiter, unlimited, type MemoryRateLimiter, type RateLimiter } from "./auth/rate-limit";
import { createModelRegistry, type ModelRegistry } from "./models/registry";
import type { UpstreamFetch } from "./models/adapter";
import type { WorkersAiBinding } from "./models/workers-ai";
import type { Principal } from "./auth/principal";
import { LOCAL_AUDIENCE, LOCAL_ISSUER, localKeyFromPrivateJwk, signLocalToken, type LocalKey } from "./auth/local-login";
import { createTranscriber, type Transcriber } from "./speech/transcription";
import { createSessionTokens, type SessionTokens } from "./auth/session-tokens";
import { IdentityLinks } from "./auth/identity-links";
import { EndedSessions } from "./auth/ended-sessions";
import { KnownAccounts } from "./auth/known-accounts";
import { SuspendedAccounts } from "./auth/suspended-accounts";
import { contractWallets, type ContractWallets } from "./auth/wallet-contracts";

/** What lives as long as the process (Node) or the isolate (Workers). */
export interface Runtime {
  config: Config;
  log: Logger;
  /** The clock; tests hand in a controllable one. */
  now: () => Date;
  verifyJwt: JwtVerifier;
  /** The chat models, bound to their providers as configured. */
  models: ModelRegistry;
  /** Requests per user per minute on this instance (RATE_LIMIT_PER_MINUTE). */
  rateLimiter: MemoryRateLimiter;
  /** Failed authentications per client address (AUTH_FAILURES_PER_MINUTE). */
  authFailureLimiter: RateLimiter;
  /** Successful sign-ins per client address and per identity (SIGN_INS_PER_*_PER_MINUTE). */
  signInLimiters: { address: RateLimiter; identity: RateLimiter };
  /** The sessions whose access tokens are refused: a copy of the database's rows. */
  endedSessions: EndedSessions;
  /** Accounts known to exist, for SIGN_UP=invite|closed, where a provider's token may not create one. */
  knownAccounts: KnownAccounts;
  /** The suspended accounts, whose tokens are refused: a copy of the database's rows. */
  suspendedAccounts: SuspendedAccounts;
  /** Issues local-login tokens (POST /auth/local); only in local-login mode. */
  localLogin?: (name: string) => Promise<{ token: string; expiresAt: Date }>;
  /** Speech to text for POST /audio/transcriptions, when a provider is configured. */
  transcriber?: Transcriber;
  /** The service's own sessions' access tokens; absent only on a Worker without SESSION_SIGNING_KEY. */
  sessionTokens?: SessionTokens;
  /** Which account a bearer token's identity signs in to (linked sign-in methods). */
  identityLinks: IdentityLinks;
  /** Smart-contract wallet signatures, when WALLET_RPC_URL names nodes. */
  contractWallets?: ContractWallets;
  /** Replies being written in this process, for the requests that follow them (background replies). */
  liveReplies: LiveTexts;
  /** What the operator's monitoring counts (GET /metrics on Node); a no-op where nothing collects it. */
  metrics: Metrics;
}

/** What every request gets from its entry: the runtime plus a database handle. */
export interface Deps extends Runtime {
  db: Db;
  /**
   * Node's embedded file only: why the file at the database's path is no longer the one
   * this process opened (deleted or replaced), or null while it is. For the health check.
   */
  databaseFileProblem?: () => string | null;
  /**
   * The address of the client that sent the request, as the entry can know it (Node: the
   * socket's peer; Workers: CF-Connecting-IP), or undefined when it cannot.
   */
  clientAddress?: (c: Context) => string | undefined;
  /** The built web client's files; without it the service is the API alone. */
  assets?: AssetSource;
  /** Attachments' bytes (files on Node, R2 on Workers); without it, uploads answer 503. */
  blobs?: BlobStore;
  /**
   * Loads pdf.js for a PDF's text, on first use. The Worker hands in its own (pdf.js is a
   * module of its own there, src/worker.ts); without it unpdf loads its bundled copy (Node).
   */
  pdfjs?: PdfjsLoader;
  /**
   * Keeps work that outlives its reply (a new context's title) where there is no
   * ExecutionContext to keep it (Node): the server lets it finish before it exits. On
   * Workers, `waitUntil` keeps it instead.
   */
  background?: (work: Promise<unknown>) => void;
  /**
   * The origin share links point at when PUBLIC_BASE_URL is not set: one the entry knows
   * and a caller cannot spoof (the Node server's own address, the Worker's request URL),
   * never the Host header of a Node request.
   */
  baseUrl?: string;
}

/** Imports pdf.js (unpdf's serverless build): what unpdf's `definePDFJSModule` takes. */
export type PdfjsLoader = () => Promise<unknown>;

/**
 * The built web client's files (web/dist): the reply for a file at `path` (a URL path such
 * as `/assets/index-3f2a.js`), or undefined when there is none; a source may encode it as
 * the request's Accept-Encoding allows. The Node server reads a directory
 * (src/platform/node/web-files.ts); the Worker asks its static assets binding.
 */
export type AssetSource = (path: string, acceptEncoding?: string) => Promise<Response | undefined>;

/**
 * What each request carries. Read it with `c.get("deps")`: Hono's `c.var` copies every
 * variable into a new object on each access, several times per request.
 */
export interface AppEnv {
  Variables: {
    deps: Deps;
    requestId: string;
    principal: Principal;
    /** The request body parsed exactly, `{}` when empty (src/platform/http/json-body.ts); routes read it validated, as `c.req.valid("json")`. */
    jsonBody: unknown;
  };
}

export interface RuntimeOptions {
  /** Whether one request may follow a reply another request writes, in memory (Node); false on Workers, where they read the database. */
  liveRepliesShared?: boolean;
  /** Overrides the key source read from config. */
  authSource?: JwtKeySource;
  /** Local login: trust tokens this key signs and issue them (the Node server without a provider). */
  localKey?: LocalKey;
  now?: () => Date;
  log?: Logger;
  /** The Workers AI binding, which can serve svc-70b on Workers. */
  workersAi?: WorkersAiBinding;
  /** Overrides the in-memory failed-authentication limit (Workers: the rate-limiting binding). */
  authFailureLimiter?: RateLimiter;
  /** Override the in-memory sign-in limits (Workers: the rate-limiting bindings). */
  signInLimiters?: { address: RateLimiter; identity: RateLimiter };
  /** How old the copy of the ended sessions may get before it is read again (default: never, as on Node). */
  endedSessionsMaxAgeMs?: number;
  /** How model adapters call their upstreams: a kept-alive pool on Node (default: the global fetch). */
  upstreamFetch?: UpstreamFetch;
  /** Offer the models of a local Ollama at this address (the Node server's first run, nothing configured). */
  localOllama?: string;
  /** What the service reports for monitoring (the Node server: prom-client's); default: nothing is kept. */
  metrics?: Metrics;
  /** The session signing key when SESSION_SIGNING_KEY is unset (Node: the one in its data folder). */
  sessionKey?: string;
  /** How old the linked identities known in memory may get before they are read again (default a minute). */
  identityLinksMaxAgeMs?: number;
}

/** The JWT key source the configuration names, or undefined when none is set. */
export function configuredAuthSource(config: Config): JwtKeySource | undefined {
  if (config.AUTH_OIDC_ISSUER) return { kind: "oidc", issuer: config.AUTH_OIDC_ISSUER };
  if (config.AUTH_JWKS_URL) return { kind: "jwks", url: config.AUTH_JWKS_URL };
  if (config.AUTH_PUBLIC_KEY) return { kind: "public-key", key: config.AUTH_PUBLIC_KEY };
  if (config.AUTH_HS256_SECRET) return { kind: "hs256", secret: config.AUTH_HS256_SECRET };
  return undefined;
}

/**
 * The local-login key in effect: the one the entry hands in, or the Worker's
 * LOCAL_LOGIN_PRIVATE_JWK from `npm run dev`; never in production or beside a provider.
 */
function localKeyFor(config: Config, options: RuntimeOptions): LocalKey | undefined {
  if (config.NODE_ENV === "production" || options.authSource || configuredAuthSource(config)) return undefined;
  if (options.localKey) return options.localKey;
  return config.LOCAL_LOGIN_PRIVATE_JWK ? localKeyFromPrivateJwk(config.LOCAL_LOGIN_PRIVATE_JWK) : undefined;
}

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const localKey = localKeyFor(config, options);
  if (localKey) config = { ...config, AUTH_ISSUER: LOCAL_ISSUER, AUTH_AUDIENCE: LOCAL_AUDIENCE };
  const source = options.authSource ?? configuredAuthSource(config) ?? (localKey && { kind: "jwk" as const, jwk: localKey.publicJwk });
  if (!source) {
    throw new Error(
      "no identity provider is configured: set AUTH_OIDC_ISSUER, AUTH_JWKS_URL, AUTH_PUBLIC_KEY or AUTH_HS256_SECRET",
    );
  }
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const audience = config.AUTH_OIDC_AUDIENCE ?? config.AUTH_AUDIENCE;
  const clientId = config.AUTH_OIDC_ISSUER ? config.AUTH_OIDC_CLIENT_ID : undefined;
  if (!audience && !clientId) {
    throw new Error("no audience to require of tokens: set AUTH_AUDIENCE to the `aud` your identity provider gives tokens for this service");
  }
  const models = createModelRegistry(config, {
    workersAi: options.workersAi,
    fetch: options.upstreamFetch,
    localOllama: options.localOllama,
    log,
    now: options.now && (() => options.now!().getTime()),
  });
  requireTitleModel(config, models);
  return {
    liveReplies: new LiveTexts({ shared: options.liveRepliesShared ?? true }),
    metrics: options.metrics ?? noMetrics,
    localLogin: localKey && ((name) => signLocalToken(localKey, name)),
    config,
    log,
    now: options.now ?? (() => new Date()),
    verifyJwt: await createJwtVerifier({
      source,
      issuer: config.AUTH_OIDC_ISSUER ?? config.AUTH_ISSUER,
      audience,
      clientId,
      keysMaxAgeMs: config.AUTH_KEYS_MAX_AGE_SECONDS * 1000,
    }),
    models,
    rateLimiter: createRateLimiter(config.RATE_LIMIT_PER_MINUTE),
    authFailureLimiter:
      config.AUTH_FAILURES_PER_MINUTE === 0
        ? unlimited
        : (options.authFailureLimiter ?? createRateLimiter(config.AUTH_FAILURES_PER_MINUTE)),
    // 0 turns a limit off wherever it is counted (Workers: the bindings').
    signInLimiters: {
      address: config.SIGN_INS_PER_ADDRESS_PER_MINUTE === 0 ? unlimited : (options.signInLimiters?.address ?? createRateLimiter(config.SIGN_INS_PER_ADDRESS_PER_MINUTE)),
      identity: config.SIGN_INS_PER_IDENTITY_PER_MINUTE === 0 ? unlimited : (options.signInLimiters?.identity ?? createRateLimiter(config.SIGN_INS_PER_IDENTITY_PER_MINUTE)),
    },
    endedSessions: new EndedSessions(options.endedSessionsMaxAgeMs ?? Infinity),
    knownAccounts: new KnownAccounts(),
    suspendedAccounts: new SuspendedAccounts(options.endedSessionsMaxAgeMs ?? Infinity),
    transcriber: createTranscriber(config, options.workersAi),
    sessionTokens: await sessionTokensFor(config, options),
    identityLinks: new IdentityLinks(options.identityLinksMaxAgeMs ?? 60_000),
    contractWallets: config.WALLET_RPC_URL.length > 0 ? contractWallets(config.WALLET_RPC_URL) : undefined,
  };
}

function sessionTokensFor(config: Config, options: RuntimeOptions): Promise<SessionTokens> | undefined {
  const key = config.SESSION_SIGNING_KEY ?? options.sessionKey;
  return key === undefined ? undefined : createSessionTokens(key);
}

/** TITLE_MODEL names a model of the catalog (checked at start, unless providers' lists are only known later). */
function requireTitleModel(config: Config, models: ModelRegistry): void {
  const id = config.TITLE_MODEL;
  if (id === undefined || models.discovers || models.get(id)) return;
  throw new Error(`invalid configuration: TITLE_MODEL: no model '${id}' in the catalog; one of ${models.list().map((m) => m.id).join(", ")}`);
}
