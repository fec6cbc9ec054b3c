import { importJWK, SignJWT, type JWK } from "jose";

/**
 * Local login when no identity provider is configured (never in production): an ES256 key
 * kept in the data folder (src/platform/node/local-login-key.ts) signs tokens that the service trusts,
 * printed by `npm run token -- <name>` or issued to the web client by POST /auth/local.
 * The Node server holds the key itself; `npm run dev` hands it to the Worker.
 */
export const LOCAL_ISSUER = "local-login";
export const LOCAL_AUDIENCE = "plant-chat-local";
/** How long a local token lasts unless asked otherwise. */
export const LOCAL_TOKEN_TTL_SECONDS = 24 * 3600;

export interface LocalKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

/** The key from its private JWK alone (as `npm run dev` passes it): the public half is d dropped. */
export function localKeyFromPrivateJwk(text: string): LocalKey {
  const privateJwk = JSON.parse(text) as JWK;
  if (privateJwk.kty !== "EC" || !privateJwk.d) throw new Error("LOCAL_LOGIN_PRIVATE_JWK must be a private EC key as a JWK");
  const { d: _private, ...publicJwk } = privateJwk;
  return { kid: privateJwk.kid ?? "local", privateJwk, publicJwk };
}

export async function signLocalToken(
  key: LocalKey,
  name: string,
  ttlSeconds = LOCAL_TOKEN_TTL_SECONDS,
  now = new Date(),
): Promise<{ token: string; expiresAt: Date }> {
  const privateKey = await importJWK(key.privateJwk, "ES256");
  const issuedAt = Math.floor(now.getTime() / 1000);
  const token = await new SignJWT({ name })
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT" })
    .setIssuer(LOCAL_ISSUER)
    .setAudience(LOCAL_AUDIENCE)
    .setSubject(`local:${name}`)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ttlSeconds)
    .sign(privateKey);
  return { token, expiresAt: new Date((issuedAt + ttlSeconds) * 1000) };
}
