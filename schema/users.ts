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
    // The identity provider said `email_verified: true` for `email` (ADMINS may name such an address).
    emailVerified: integer({ mode: "boolean" }).notNull().default(false),
    // Suspended by an admin (the operator's console): its tokens and keys are refused, its sign-ins too.
    suspendedAt: integer({ mode: "timestamp_ms" }),
    suspendedReason: text(),
    // The plan (PLANS) an admin or an invite put the account on; null or unknown: the default plan.
    planId: text(),
    // Every credit ever granted by an admin: what is left is this less the `grant` row of credit_days.
    grantedCredits: integer().notNull().default(0),
    // The invite the account was created with, if any.
    inviteId: text(),
  },
  (t) => [
    uniqueIndex("users_identity_idx").on(t.issuer, t.subject),
    // The suspended accounts, read whole by every process (src/platform/auth/suspended-accounts.ts).
    index("users_suspended_idx").on(t.id).where(sql`suspended_at is not null`),
    index("users_created_idx").on(t.createdAt, t.id),
  ],
);

/**
 * The ways a person signs in to an account (its sign-in methods): a wallet (issuer
 * `eip155`, subject the EIP-55 address), an identity provider's (iss, sub), a local-login
 * name. One identity belongs to at most one account. The identity that created an account
 * usually names it (`users.id` is derived from it, `ownId`), so its bearer tokens find their
 * account without a read; a row whose account is not its own derived id (linked to another
 * account, or removed: `userId` null) is an exception every process keeps in memory
 * (src/platform/auth/identity-links.ts). The identity in `users.issuer`/`subject` may lack
 * a row until the account's methods are first listed or changed.
 */
export const identities = sqliteTable(
  "identities",
  {
    id: text().primaryKey(),
    // Null: removed from its account, whose id it still derives; kept so that its bearer
    // tokens do not reach that account (see identity-links.ts).
    userId: text().references(() => users.id, { onDelete: "cascade" }),
    issuer: text().notNull(),
    subject: text().notNull(),
    ownId: integer({ mode: "boolean" }).notNull(),
    // What a person recognises it by: the address, the e-mail, the name.
    label: text(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    uniqueIndex("identities_identity_idx").on(t.issuer, t.subject),
    index("identities_user_idx").on(t.userId),
    // The exceptions, read whole by every process: only they are in this index. A removed
    // identity (no account) is one whatever its ownId: its tokens must reach no account.
    index("identities_exceptions_idx").on(t.issuer, t.subject, t.userId).where(sql`own_id = 0 or user_id is null`),
  ],
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
    // The owner's limits on the key: credits a UTC day, an expiry, the models it may call (null: none set).
    dailyCreditLimit: integer(),
    expiresAt: integer({ mode: "timestamp_ms" }),
    models: text({ mode: "json" }).$type<string[]>(),
  },
  (t) => [uniqueIndex("api_keys_hash_idx").on(t.hash), index("api_keys_user_idx").on(t.userId)],
);
