import { allowInsecureRequests, discoveryRequest, processDiscoveryResponse, type AuthorizationServer } from "oauth4webapi";
import QuickLRU from "quick-lru";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  importJWK,
  importSPKI,
  jwtVerify,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  type CryptoKey,
} from "jose";

/** What a verified token tells about the login. */
export interface Identity {
  issuer: string;
  subject: string;
  email?: string;
  /** The provider's `email_verified: true`: ADMINS may name the address. */
  emailVerified?: boolean;
  wallet?: string;
  name?: string;
  /** The `picture` claim (social logins): a URL the profile's avatar starts as. */
  picture?: string;
}

export type JwtKeySource =
  | { kind: "jwks"; url: string }
  | { kind: "oidc"; issuer: string } // the JWKS named by the issuer's discovery document
  | { kind: "public-key"; key: string } // PEM (SPKI) or a JWK as JSON
  | { kind: "jwk"; jwk: JWK } // the Node server's local login key
  | { kind: "hs256"; secret: string };

export interface JwtVerifierOptions {
  source: JwtKeySource;
  issuer?: string;
  /** The `aud` every token must name (AUTH_OIDC_AUDIENCE, AUTH_AUDIENCE). */
  audience?: string;
  /**
   * OpenID Connect without an API audience: the client id (AUTH_OIDC_CLIENT_ID) a token must
   * name instead, in its `aud`, or as its `azp` or `client_id` (RFC 9068), the client it was
   * issued to. One of the two is required: a token naming no audience of this service is
   * another app's.
   */
  clientId?: string;
  /** How long a provider's keys (JWKS, OpenID) are used before they are fetched again; default 10 minutes. */
  keysMaxAgeMs?: number;
}

/**
 * Verifies an identity-provider token. `audience` is given for ID tokens (whose audience is
 * the client id): such a verdict is never cached, so that a token verified for one audience
 * is not taken for another.
 */
export type JwtVerifier = (token: string, options?: { audience?: string }) => Promise<Identity>;

/** Why a token was refused, in words safe to show the caller (never the token). */
export class InvalidTokenError extends Error {
  override name = "InvalidTokenError";
}

const ASYMMETRIC = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
// Order matters only for speed: the first algorithm a PEM key imports under is the one pinned.
const PEM_CANDIDATES = ["ES256", "ES384", "ES512", "RS256", "EdDSA"];

/**
 * Builds a verifier with the algorithms pinned to the key source: a JWKS or public key
 * accepts only asymmetric algorithms, a shared secret only HS256, and `none` never.
 */
export async function createJwtVerifier(options: JwtVerifierOptions): Promise<JwtVerifier> {
  // Key import errors surface here, at startup, not as 401s later.
  const source = keyFor(options.source, options.keysMaxAgeMs ?? KEYS_MAX_AGE_MS);
  const key = await source.key;
  const algorithms = await source.algorithms;
  if (!options.audience && !options.clientId) throw new Error("a token verifier needs the audience its tokens must name (AUTH_AUDIENCE, or AUTH_OIDC_CLIENT_ID)");
  const verified = new VerifiedTokenCache<Identity>();
  return async (token, { audience } = {}) => {
    const usual = audience === undefined;
    const expected = audience ?? options.audience;
    const cached = usual ? verified.get(token) : undefined;
    if (cached) return cached;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key as JWTVerifyGetKey, {
        algorithms,
        issuer: options.issuer,
        audience: expected,
        requiredClaims: ["exp", "sub"],
        clockTolerance: 5,
      }));
    } catch (err) {
      if (err instanceof KeysUnavailable) throw err;
      throw new InvalidTokenError(reason(err));
    }
    if (!issuedToThisService(payload, expected, options.clientId, !usual)) throw new InvalidTokenError("the access token is meant for another audience");
    // jose checks that sub and iss are present, not what they are: the user's identity is
    // (iss, sub), so both must be plain, non-empty strings, without the NUL that joins them
    // into one (src/platform/auth/identity.ts) and that the database cannot read back.
    if (typeof payload.sub !== "string" || payload.sub === "" || payload.sub.length > 255 || payload.sub.includes("\u0000")) {
      throw new InvalidTokenError('the access token\'s "sub" claim must be a non-empty string of at most 255 characters, without U+0000');
    }
    if (payload.iss !== undefined && (typeof payload.iss !== "string" || payload.iss.length > 255 || payload.iss.includes("\u0000"))) {
      throw new InvalidTokenError('the access token\'s "iss" claim must be a string of at most 255 characters, without U+0000');
    }
    const identity = identityOf(payload);
    if (usual) verified.set(token, identity, payload);
    return identity;
  };
}

/**
 * Tokens already verified, so that a client reusing its access token does not pay for a
 * signature check (~0.25 ms for ES256) on every request. A token is immutable, so only
 * time can change the verdict: an entry lives until the token's exp, at most five minutes,
 * and only once its nbf has passed. Bounded; losing it costs only a re-verification.
 */
export class VerifiedTokenCache<T> {
  private static readonly MAX_ENTRIES = 10_000;
  private static readonly MAX_AGE_MS = 5 * 60_000;
  private readonly entries = new QuickLRU<string, { value: T; until: number }>({ maxSize: VerifiedTokenCache.MAX_ENTRIES });

  get(token: string, now = Date.now()): T | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (now >= entry.until) {
      this.entries.delete(token);
      return undefined;
    }
    return entry.value;
  }

  set(token: string, value: T, payload: JWTPayload, now = Date.now()): void {
    if (payload.nbf !== undefined && payload.nbf * 1000 > now) return;
    const until = Math.min((payload.exp ?? 0) * 1000, now + VerifiedTokenCache.MAX_AGE_MS);
    if (until <= now) return;
    this.entries.set(token, { value, until });
  }
}

function keyFor(source: JwtKeySource, keysMaxAgeMs: number): {
  key: Promise<CryptoKey | Uint8Array | JWTVerifyGetKey>;
  algorithms: Promise<string[]>;
} {
  switch (source.kind) {
    case "jwks":
      return { key: Promise.resolve(outageTolerantKeySet(new URL(source.url), keysMaxAgeMs)), algorithms: Promise.resolve(ASYMMETRIC) };
    case "oidc":
      return { key: Promise.resolve(discoveredKeySet(source.issuer, keysMaxAgeMs)), algorithms: Promise.resolve(ASYMMETRIC) };
    case "hs256":
      return { key: Promise.resolve(new TextEncoder().encode(source.secret)), algorithms: Promise.resolve(["HS256"]) };
    case "jwk":
      return importPinned(source.jwk);
    case "public-key": {
      const text = source.key.trim();
      if (text.startsWith("{")) return importPinned(JSON.parse(text) as JWK);
      const imported = importPem(text.replace(/\\n/g, "\n"));
      return { key: imported.then((k) => k.key), algorithms: imported.then((k) => [k.alg]) };
    }
  }
}

/**
 * The identity provider's keys (or its discovery document) cannot be had now: the token may
 * well be good, so this is the service's trouble (a 503 with Retry-After), never a reason to
 * send the person back through login, and never a failed authentication.
 */
export class KeysUnavailable extends Error {
  override name = "KeysUnavailable";
}

/** How long keys fetched from a provider are used before they are fetched again (AUTH_KEYS_MAX_AGE_SECONDS). */
const KEYS_MAX_AGE_MS = 10 * 60_000;
/** After a failed fetch, known keys serve alone this long (at most the keys' age) before the provider is asked again. */
const OUTAGE_RETRY_MS = 10_000;

/** What jose throws about the token itself (its `kid` or `alg`), as opposed to the key source failing. */
const aboutTheToken = (err: unknown) =>
  err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JOSENotSupported || err instanceof errors.JOSEAlgNotAllowed;

/**
 * A provider's key set (jose's remote JWKS: cached, refetched when old or when a new `kid`
 * appears) that outlives the provider's outages. When the provider cannot be reached, the
 * keys it last served keep verifying tokens signed with them, past their age, and the
 * provider is asked again only every OUTAGE_RETRY_MS (or the keys' age, if shorter), so an
 * outage costs no request a wait for a fetch that fails. A token that needs keys this service does not have, while the
 * provider is down, is KeysUnavailable (503), not a bad token.
 */
function outageTolerantKeySet(url: URL, maxAgeMs: number): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(url, { cacheMaxAge: maxAgeMs, cooldownDuration: Math.min(30_000, maxAgeMs), timeoutDuration: 3_000 });
  const retryMs = Math.min(OUTAGE_RETRY_MS, maxAgeMs);
  let failedAt = -Infinity;
  let lastKnown: { getKey: JWTVerifyGetKey } | undefined;
  const fromLastKnown = async (header: Parameters<JWTVerifyGetKey>[0], token: Parameters<JWTVerifyGetKey>[1], cause: unknown) => {
    const known = remote.jwks();
    if (!known) throw new KeysUnavailable(`the identity provider's keys (${url.href}) could not be fetched; try again shortly`, { cause });
    lastKnown ??= { getKey: createLocalJWKSet(known) };
    try {
      return await lastKnown.getKey(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) {
        throw new KeysUnavailable("the token is signed by a key the identity provider has not served yet, and it cannot be reached; try again shortly", { cause });
      }
      throw err;
    }
  };
  return async (header, token) => {
    if (!remote.fresh && Date.now() - failedAt < retryMs) return fromLastKnown(header, token, undefined);
    try {
      const key = await remote(header, token);
      lastKnown = undefined;
      return key;
    } catch (err) {
      if (aboutTheToken(err)) throw err;
      failedAt = Date.now();
      lastKnown = undefined;
      return fromLastKnown(header, token, err);
    }
  };
}

/**
 * The key set of an OpenID Connect issuer: its discovery document names `jwks_uri`, which
 * jose then fetches and caches as for AUTH_JWKS_URL. Discovery happens on the first token,
 * not at startup (the provider may start later), and is remembered once it succeeds; a
 * failure is remembered for a short cooldown, so a down provider costs one fetch per
 * cooldown rather than one per request.
 */
function discoveredKeySet(issuer: string, keysMaxAgeMs: number): JWTVerifyGetKey {
  const COOLDOWN_MS = 10_000;
  let keySet: Promise<JWTVerifyGetKey> | undefined;
  let failedAt = 0;
  const discover = async (): Promise<JWTVerifyGetKey> => {
    // oauth4webapi fetches the document and checks it (its issuer must be this one); http is
    // allowed only where the operator configured an http issuer (a provider on loopback).
    const issuerUrl = new URL(issuer);
    const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    const options = { algorithm: "oidc" as const, signal: AbortSignal.timeout(5000), [allowInsecureRequests]: issuerUrl.protocol === "http:" };
    let server: AuthorizationServer;
    try {
      server = await processDiscoveryResponse(issuerUrl, await discoveryRequest(issuerUrl, options));
    } catch (err) {
      throw new KeysUnavailable(`the identity provider's discovery document (${url}) could not be fetched: ${err instanceof Error ? err.message : err}; try again shortly`);
    }
    if (typeof server.jwks_uri !== "string" || !/^https?:\/\//.test(server.jwks_uri)) {
      throw new KeysUnavailable(`the identity provider's discovery document (${url}) names no jwks_uri`);
    }
    return outageTolerantKeySet(new URL(server.jwks_uri), keysMaxAgeMs);
  };
  return async (header, token) => {
    if (!keySet && Date.now() - failedAt < COOLDOWN_MS) {
      throw new KeysUnavailable("the identity provider's discovery document could not be fetched; try again shortly");
    }
    keySet ??= discover().catch((err) => {
      keySet = undefined;
      failedAt = Date.now();
      throw err;
    });
    return (await keySet)(header, token);
  };
}

function importPinned(jwk: JWK) {
  const alg = jwk.alg ?? algForJwk(jwk);
  if (!ASYMMETRIC.includes(alg)) throw new Error(`the configured JWK's algorithm ${alg} is not an asymmetric JWS algorithm`);
  return { key: importJWK({ ...jwk, d: undefined }, alg) as Promise<CryptoKey>, algorithms: Promise.resolve([alg]) };
}

function algForJwk(jwk: JWK): string {
  if (jwk.kty === "EC") return ({ "P-256": "ES256", "P-384": "ES384", "P-521": "ES512" } as Record<string, string>)[jwk.crv ?? ""] ?? "ES256";
  if (jwk.kty === "OKP") return "EdDSA";
  if (jwk.kty === "RSA") return "RS256";
  throw new Error(`the configured JWK has unsupported key type ${jwk.kty}`);
}

async function importPem(pem: string): Promise<{ key: CryptoKey; alg: string }> {
  for (const alg of PEM_CANDIDATES) {
    try {
      return { key: await importSPKI(pem, alg), alg };
    } catch {
      // not this key type; try the next
    }
  }
  throw new Error("AUTH_PUBLIC_KEY is not an SPKI PEM public key of a supported type (EC, RSA, Ed25519)");
}

/**
 * Beyond jose's check of `aud` against `expected`: with no audience configured (OpenID
 * Connect alone), the token must name the client id, in `aud` or as the client it was issued
 * to (`azp`, or RFC 9068's `client_id`). With OpenID Connect, an ID token (`idToken`) that
 * names its authorized party must name this client (OpenID Connect Core 3.1.3.7).
 */
function issuedToThisService(payload: JWTPayload, expected: string | undefined, clientId: string | undefined, idToken: boolean): boolean {
  if (idToken && clientId !== undefined && payload.azp !== undefined && payload.azp !== expected) return false;
  if (expected !== undefined) return true;
  const audiences = Array.isArray(payload.aud) ? payload.aud : payload.aud === undefined ? [] : [payload.aud];
  return clientId !== undefined && (audiences.includes(clientId) || payload.azp === clientId || payload.client_id === clientId);
}

function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return "the access token has expired; sign in again";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "nbf") return "the access token is not valid yet";
    if (err.claim === "iss") return "the access token was issued by an untrusted issuer";
    if (err.claim === "aud") return "the access token is meant for another audience";
    if (err.reason === "missing") return `the access token lacks the required "${err.claim}" claim`;
    return `the access token's "${err.claim}" claim is invalid`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return "the access token is signed with an algorithm this service does not accept";
  if (err instanceof errors.JWKSNoMatchingKey) return "the access token is signed by a key this service does not trust";
  if (err instanceof errors.JWSSignatureVerificationFailed) return "the access token's signature is invalid";
  return "the access token is malformed or invalid";
}

function identityOf(payload: JWTPayload): Identity {
  const claim = (name: string) => {
    const v = payload[name];
    // A claim that could not be stored faithfully (U+0000, see src/platform/http/json-body.ts) is ignored.
    return typeof v === "string" && v.length > 0 && v.length <= 320 && v.isWellFormed() && !v.includes("\u0000") ? v : undefined;
  };
  return {
    issuer: payload.iss ?? "",
    subject: payload.sub as string,
    email: claim("email"),
    emailVerified: payload.email_verified === true,
    wallet: claim("wallet_address") ?? claim("wallet") ?? claim("address") ?? firstWallet(payload),
    name: claim("name") ?? claim("preferred_username") ?? claim("nickname"),
    picture: typeof payload.picture === "string" && payload.picture.length <= 2048 ? payload.picture : undefined,
  };
}

// Wallet logins (Dynamic, Web3Auth) list addresses in an array claim.
function firstWallet(payload: JWTPayload): string | undefined {
  for (const name of ["verified_credentials", "wallets"]) {
    const list = payload[name];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const address = item && typeof item === "object" ? (item as Record<string, unknown>).address ?? (item as Record<string, unknown>).public_key : undefined;
      if (typeof address === "string" && address.length <= 128 && address.isWellFormed() && !address.includes("\u0000")) return address;
    }
  }
  return undefined;
}
