import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { exportJWK, generateKeyPair } from "jose";
import type { LocalKey } from "../auth/local-login";
import type { Logger } from "../log";
import { makeDataFolder, tighten } from "./data-folder";

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

/** Where the Node server keeps the key that signs its sessions' access tokens when SESSION_SIGNING_KEY is unset. */
export function sessionKeyFile(databaseUrl = DEFAULT_DATABASE_URL): string {
  return join(dirname(localKeyFile(databaseUrl)), "session-key.json");
}

/** The ES256 key pair kept in `file` (0600, in a 0700 folder), made on first use (the local-login key, the session key). */
export async function loadOrCreateLocalKey(file: string, log?: Logger): Promise<LocalKey> {
  if (existsSync(file)) {
    tighten(file, log);
    return JSON.parse(readFileSync(file, "utf8")) as LocalKey;
  }
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = crypto.randomUUID();
  const stored: LocalKey = {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), alg: "ES256", kid },
    publicJwk: { ...(await exportJWK(publicKey)), alg: "ES256", kid },
  };
  makeDataFolder(dirname(file));
  writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  return stored;
}
