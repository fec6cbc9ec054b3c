import { calculateJwkThumbprint, decodeProtectedHeader, errors, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from "jose";
import { InvalidTokenError, VerifiedTokenCache } from "./jwt";

/**
 * The access tokens of the service's own sessions (POST /auth/session): ES256 JWTs it signs
 * itself, short-lived, naming the account (`sub`, a user id) and the session (`sid`), so a
 * request carrying one needs no database read to know its caller. The public keys are served
 * at /.well-known/jwks.json. A valid token of a session that has ended is refused by the
 * credential middleware, from the ended sessions' rows (ended-sessions.ts).
 */

/** How a session began: a wallet's signature, the identity provider's token, or a local-login name. */
export type SignInMethod = "wallet" | "provider" | "local";

export interface SessionClaims {
  userId: string;
  sessionId: string;
  method: SignInMethod;
  expiresAt: Date;
}

/** A public key of the service's sessions, as /.well-known/jwks.json serves it. */
export interface SessionPublicJwk {
  kty: string;
  crv: string;
  x: string;
  y: string;
  kid: string;
  alg: "ES256";
  use: "sig";
}

export interface SessionTokens {
  /** Whether the token is signed by one of the service's session keys (by its `kid`), before any verification. */
  isSessionToken(token: string): boolean;
  sign(claims: Omit<SessionClaims, "expiresAt">, options: { issuer: string; now: Date; ttlSeconds: number }): Promise<{ token: string; expiresAt: Date }>;
  /** The claims of a valid token for `issuer` at `now`; an InvalidTokenError says why not. */
  verify(token: string, options: { issuer: string; now: Date }): Promise<SessionClaims>;
  /** The public keys, as a JWKS. */
  jwks: { keys: SessionPublicJwk[] };
}

const METHODS: readonly SignInMethod[] = ["wallet", "provider", "local"];

/**
 * The session keys from configuration: one private EC P-256 JWK as JSON, or a JWKS
 * `{ "keys": [...] }` of private JWKs whose first signs and all verify (rotation: put the new
 * key first, drop the old one once its tokens have expired).
 */
export async function createSessionTokens(text: string): Promise<SessionTokens> {
  let parsed: { keys?: JWK[] } & JWK;
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw new Error("SESSION_SIGNING_KEY is not JSON: it must be a private EC P-256 JWK, or a JWKS of them (npm run session-key prints one)");
  }
  const list = Array.isArray(parsed.keys) ? parsed.keys : [parsed];
  if (list.length === 0) throw new Error("SESSION_SIGNING_KEY holds no key");
  const keys = await Promise.all(
    list.map(async (jwk) => {
      if (jwk.kty !== "EC" || jwk.crv !== "P-256" || !jwk.d) throw new Error("SESSION_SIGNING_KEY must hold private EC P-256 JWKs (with d)");
      const { d: _private, ...publicJwk } = jwk;
      const kid = jwk.kid ?? (await calculateJwkThumbprint(publicJwk));
      return {
        kid,
        privateKey: (await importJWK({ ...jwk, alg: "ES256" }, "ES256")) as CryptoKey,
        publicKey: (await importJWK({ ...publicJwk, alg: "ES256" }, "ES256")) as CryptoKey,
        publicJwk: { kty: publicJwk.kty!, crv: publicJwk.crv!, x: publicJwk.x!, y: publicJwk.y!, kid, alg: "ES256", use: "sig" } satisfies SessionPublicJwk,
      };
    }),
  );
  const byKid = new Map(keys.map((k) => [k.kid, k]));
  const signing = keys[0]!;
  const verified = new VerifiedTokenCache<SessionClaims & { issuer: string }>();

  return {
    jwks: { keys: keys.map((k) => k.publicJwk) },

    isSessionToken(token) {
      try {
        const { kid } = decodeProtectedHeader(token);
        return kid !== undefined && byKid.has(kid);
      } catch {
        return false;
      }
    },

    async sign(claims, { issuer, now, ttlSeconds }) {
      const issuedAt = Math.floor(now.getTime() / 1000);
      const token = await new SignJWT({ sid: claims.sessionId, method: claims.method })
        .setProtectedHeader({ alg: "ES256", kid: signing.kid, typ: "at+jwt" })
        .setIssuer(issuer)
        .setAudience(issuer)
        .setSubject(claims.userId)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttlSeconds)
        .sign(signing.privateKey);
      return { token, expiresAt: new Date((issuedAt + ttlSeconds) * 1000) };
    },

    async verify(token, { issuer, now }) {
      let claims = verified.get(token, now.getTime());
      if (!claims || claims.issuer !== issuer) {
        try {
          const { payload } = await jwtVerify(token, (header) => byKid.get(header.kid ?? "")?.publicKey ?? Promise.reject(new errors.JWKSNoMatchingKey()), {
            algorithms: ["ES256"],
            issuer,
            audience: issuer,
            typ: "at+jwt",
            currentDate: now,
            requiredClaims: ["exp", "sub", "sid"],
            // Issued and checked by this service's own clocks (NTP-synchronised machines).
            clockTolerance: 1,
          });
          if (typeof payload.sid !== "string" || !METHODS.includes(payload.method as SignInMethod)) {
            throw new InvalidTokenError("the access token is malformed or invalid");
          }
          claims = { userId: payload.sub!, sessionId: payload.sid, method: payload.method as SignInMethod, expiresAt: new Date(payload.exp! * 1000), issuer };
          verified.set(token, claims, payload, now.getTime());
        } catch (err) {
          if (err instanceof InvalidTokenError) throw err;
          throw new InvalidTokenError(
            err instanceof errors.JWTExpired
              ? "the access token has expired; refresh the session (POST /auth/refresh) or sign in again"
              : err instanceof errors.JWTClaimValidationFailed && (err.claim === "iss" || err.claim === "aud")
                ? "the access token was issued for another origin of this service; sign in here"
                : "the access token is malformed or invalid",
          );
        }
      }
      // Whether its session has ended is the database's to say (src/platform/auth/ended-sessions.ts).
      return claims;
    },
  };
}
