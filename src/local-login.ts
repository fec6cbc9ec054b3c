import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";

/**
 * Local login for the Node server when no identity provider is configured: an ES256 key
 * kept in the data folder signs tokens (`npm run token -- <name>`) that the server trusts.
 * Never used in production or in the Worker.
 */
export const LOCAL_ISSUER = "local-login";
export const LOCAL_AUDIENCE = "plant-chat-local";

/** The Node server's database when DATABASE_URL is not set. */
export const DEFAULT_DATABASE_URL = "file:./data/local.db";

/**
 * Where the local-login key lives: beside the embedded database file (so the server, the
 * token script and `npm run dev` agree), or in ./data for a remote database.
 */
export function localKeyFile(databaseUrl = DEFAULT_DATABASE_URL): string {
  const dir = databaseUrl.startsWith("file:") ? dirname(databaseUrl.slice("file:".length)) : "./data";
  return join(dir, "local-login-key.json");
}

interface StoredKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export async function loadOrCreateLocalKey(file: string): Promise<StoredKey> {
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as StoredKey;
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = crypto.randomUUID();
  const stored: StoredKey = {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), alg: "ES256", kid },
    publicJwk: { ...(await exportJWK(publicKey)), alg: "ES256", kid },
  };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  return stored;
}

export async function signLocalToken(key: StoredKey, name: string, ttlSeconds = 24 * 3600): Promise<string> {
  const privateKey = await importJWK(key.privateJwk, "ES256");
  return new SignJWT({ name })
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT" })
    .setIssuer(LOCAL_ISSUER)
    .setAudience(LOCAL_AUDIENCE)
    .setSubject(`local:${name}`)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(privateKey);
}
