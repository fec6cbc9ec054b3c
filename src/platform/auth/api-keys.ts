import { and, eq, isNull, lte, or, sql } from "drizzle-orm";
import { perDb, type Db } from "../db";
import { apiKeys, users } from "../../../schema/index";
import { randomId, sha256Hex } from "../encoding";

/** Every API key starts with this, which is how a Bearer credential is told from a JWT. */
export const API_KEY_PREFIX = "sk_";
/** How much of a key is kept in clear to let its owner recognise it. */
const VISIBLE_CHARS = 8;
/** lastUsedAt is refreshed at most this often, so using a key is not a write per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export function isApiKey(credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX);
}

/** A new secret (192 random bits), its stored hash, and its visible prefix. */
export async function generateApiKey(): Promise<{ key: string; hash: string; prefix: string }> {
  const key = randomId("sk", 24);
  return { key, hash: hashApiKey(key), prefix: key.slice(0, API_KEY_PREFIX.length + VISIBLE_CHARS) };
}

/**
 * Keys carry 192 random bits, so a plain SHA-256 is as strong as a slow hash here, and
 * looking the hash up by index leaks nothing about the secret's bytes.
 */
export function hashApiKey(key: string): string {
  return sha256Hex(key);
}

/** What the owner of a key limited it to: credits a UTC day, and the models it may call (null: not limited). */
export interface ApiKeyLimits {
  dailyCreditLimit: number | null;
  models: string[] | null;
}

export interface ApiKeyOwner extends ApiKeyLimits {
  keyId: string;
  userId: string;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  /** The account's suspension, if an admin suspended it. */
  suspendedAt: Date | null;
  suspendedReason: string | null;
}

// Built once per database handle (every API-key request runs them): see perDb.
const keyStatements = perDb((db) => ({
  find: db
    .select({
      keyId: apiKeys.id,
      userId: apiKeys.userId,
      lastUsedAt: apiKeys.lastUsedAt,
      expiresAt: apiKeys.expiresAt,
      dailyCreditLimit: apiKeys.dailyCreditLimit,
      models: apiKeys.models,
      suspendedAt: users.suspendedAt,
      suspendedReason: users.suspendedReason,
    })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.hash, sql.placeholder("hash")))
    .limit(1)
    .prepare(),
  // The condition is repeated in SQL so that concurrent requests racing past isStale record one use, not one each.
  touch: db
    .update(apiKeys)
    .set({ lastUsedAt: sql`${sql.placeholder("now")}` })
    .where(and(eq(apiKeys.id, sql.placeholder("keyId")), or(isNull(apiKeys.lastUsedAt), lte(apiKeys.lastUsedAt, sql.placeholder("staleBefore")))))
    .prepare(),
}));

/** The live key with this secret, with its limits and its account's suspension, or null. One indexed read. */
export async function findApiKey(db: Db, key: string): Promise<ApiKeyOwner | null> {
  const row = await keyStatements(db).find.get({ hash: hashApiKey(key) });
  return row ?? null;
}

/** Whether a use of this key at `now` should be recorded (lastUsedAt is older than the resolution). */
function isStale(owner: ApiKeyOwner, now: Date): boolean {
  return !owner.lastUsedAt || now.getTime() - owner.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
}

/**
 * Records use of a key when its lastUsedAt is older than the resolution: no write at all
 * for most requests (the statement repeats the condition for concurrent ones).
 */
export async function touchApiKey(db: Db, owner: ApiKeyOwner, now: Date): Promise<void> {
  if (!isStale(owner, now)) return;
  await keyStatements(db).touch.run({ keyId: owner.keyId, now: now.getTime(), staleBefore: now.getTime() - LAST_USED_RESOLUTION_MS });
}
