import { and, count, desc, eq, lt, sql } from "drizzle-orm";
import { generateApiKey } from "../../platform/auth/api-keys";
import type { Principal } from "../../platform/auth/principal";
import { randomId } from "../../platform/encoding";
import type { Db } from "../../platform/db";
import { apiKeys, users } from "../../../schema/index";
import { ensureUser } from "../../platform/auth/users";

/** How many live keys one user may hold. */
export const MAX_API_KEYS_PER_USER = 25;

/** What the owner limits a key to; null: not limited. */
export interface KeyLimits {
  dailyCreditLimit: number | null;
  expiresAt: Date | null;
  models: string[] | null;
}

export const NO_LIMITS: KeyLimits = { dailyCreditLimit: null, expiresAt: null, models: null };

export interface ApiKeySummary extends KeyLimits {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/**
 * Creates a key and returns it with its secret, the only time the secret exists outside
 * the caller's hands; null when the user already holds the maximum. The limit is part of
 * the INSERT itself (INSERT … SELECT … WHERE count < max), so concurrent creates cannot
 * exceed it. One round trip, creating the user on first sight.
 */
export async function createApiKey(
  db: Db,
  principal: Principal,
  name: string,
  now: Date,
  limits: KeyLimits = NO_LIMITS,
  maxKeys: number = MAX_API_KEYS_PER_USER,
): Promise<(ApiKeySummary & { key: string }) | null> {
  const { key, hash, prefix } = await generateApiKey();
  const id = randomId("key");
  const live = db.select({ n: count() }).from(apiKeys).where(eq(apiKeys.userId, principal.userId));
  const insert = db
    .insert(apiKeys)
    .select(
      db
        .select({
          id: sql<string>`${id}`.as("id"),
          userId: users.id,
          name: sql<string>`${name}`.as("name"),
          prefix: sql<string>`${prefix}`.as("prefix"),
          hash: sql<string>`${hash}`.as("hash"),
          createdAt: sql<number>`${now.getTime()}`.as("created_at"),
          lastUsedAt: sql<null>`null`.as("last_used_at"),
          dailyCreditLimit: sql<number | null>`${limits.dailyCreditLimit}`.as("daily_credit_limit"),
          expiresAt: sql<number | null>`${limits.expiresAt?.getTime() ?? null}`.as("expires_at"),
          models: sql<string | null>`${limits.models ? JSON.stringify(limits.models) : null}`.as("models"),
        })
        .from(users)
        .where(and(eq(users.id, principal.userId), lt(sql`(${live})`, maxKeys))),
    )
    .returning({ id: apiKeys.id, createdAt: apiKeys.createdAt });
  const user = ensureUser(db, principal, now);
  const inserted = user ? (await db.batch([user, insert]))[1] : await insert;
  const row = inserted[0];
  return row ? { id: row.id, name, prefix, key, createdAt: row.createdAt, lastUsedAt: null, ...limits } : null;
}

/** The user's keys, newest first, without their secrets, with the credits each spent today (from `dayStart`, ms) and holds. One round trip. */
export async function listApiKeys(db: Db, userId: string, dayStart: number): Promise<Array<ApiKeySummary & { creditsUsedToday: number }>> {
  return db
    .select({
      creditsUsedToday: sql<number>`((select coalesce(sum(e.credits), 0) from usage_events e where e.key_id = api_keys.id and e.at >= ${dayStart})
        + (select coalesce(sum(h.credits), 0) from credit_holds h where h.key_id = api_keys.id))`,
      id: apiKeys.id,
      name: apiKeys.name,
      prefix: apiKeys.prefix,
      createdAt: apiKeys.createdAt,
      lastUsedAt: apiKeys.lastUsedAt,
      dailyCreditLimit: apiKeys.dailyCreditLimit,
      expiresAt: apiKeys.expiresAt,
      models: apiKeys.models,
    })
    .from(apiKeys)
    .where(eq(apiKeys.userId, userId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
}

/**
 * Revokes one of the user's keys by deleting its row, so the very next request with it
 * finds nothing; false when the user has no key with this id. One round trip.
 */
export async function revokeApiKey(db: Db, userId: string, id: string): Promise<boolean> {
  const deleted = await db
    .delete(apiKeys)
    .where(and(eq(apiKeys.userId, userId), eq(apiKeys.id, id)))
    .returning({ id: apiKeys.id });
  return deleted.length === 1;
}
