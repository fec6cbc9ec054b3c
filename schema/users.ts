import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Profile preferences as stored; absent keys take the documented defaults. */
export interface StoredPreferences {
  theme?: "light" | "dark" | "auto";
  defaultModel?: string;
  voiceInput?: boolean;
  language?: string;
}

/** A named set of instructions kept in the profile, to start a context from. */
export interface StoredPreset {
  name: string;
  instructions: string;
}

/**
 * One row per identity-provider identity. The id is derived from (issuer, subject), so a
 * verified JWT names its user without a database read (see src/platform/auth/identity.ts).
 */
export const users = sqliteTable(
  "users",
  {
    id: text().primaryKey(),
    issuer: text().notNull(),
    subject: text().notNull(),
    email: text(),
    wallet: text(),
    name: text().notNull(),
    avatarUrl: text(),
    preferences: text({ mode: "json" }).$type<StoredPreferences>().notNull().default(sql`'{}'`),
    presets: text({ mode: "json" }).$type<StoredPreset[]>().notNull().default(sql`'[]'`),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("users_identity_idx").on(t.issuer, t.subject)],
);

/** API keys: only the SHA-256 of the secret is kept; `prefix` is the visible start of it. */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text().notNull(),
    prefix: text().notNull(),
    hash: text().notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    lastUsedAt: integer({ mode: "timestamp_ms" }),
  },
  (t) => [uniqueIndex("api_keys_hash_idx").on(t.hash), index("api_keys_user_idx").on(t.userId)],
);
