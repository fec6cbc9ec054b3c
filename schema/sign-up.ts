import { integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Invite codes for SIGN_UP=invite: each lets `usesLeft` more accounts be created until
 * `expiresAt`. Only the SHA-256 of a code is kept. The operator's console makes them;
 * `planId` names the plan the accounts it creates start on (none: the default).
 */
export const invites = sqliteTable(
  "invites",
  {
    id: text().primaryKey(),
    codeHash: text().notNull(),
    usesLeft: integer().notNull(),
    expiresAt: integer({ mode: "timestamp_ms" }),
    planId: text(),
    note: text(),
    // The admin who made it (a user id), kept as text: the invite outlives its maker.
    createdBy: text(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("invites_code_hash_idx").on(t.codeHash)],
);

/**
 * Accounts created per client address (an IPv4 address, or an IPv6 /64) per hour, for
 * SIGN_UPS_PER_ADDRESS_PER_HOUR: kept in the database, so that neither a restart nor another
 * instance turns a refusal into an acceptance. Counted by one conditional statement, as
 * credits are; the daily job removes past hours.
 */
export const signUpCounts = sqliteTable(
  "sign_up_counts",
  {
    client: text().notNull(),
    // The hour's start (ms since the epoch).
    windowStart: integer().notNull(),
    count: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.client, t.windowStart] })],
);
