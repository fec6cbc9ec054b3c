import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

/**
 * Credits used per user per UTC day. A new day needs no job: its row does not exist yet.
 * Debits and refunds are single conditional statements (src/features/account/credits.ts).
 * The day `grant` is the credits an admin granted, which never reset: its `used` counts up
 * to `users.granted_credits`, and it is debited, held and refunded as a day is.
 */
export const creditDays = sqliteTable(
  "credit_days",
  {
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    day: text().notNull(), // YYYY-MM-DD, UTC
    used: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.userId, t.day] })],
);

/**
 * One row per model call: a person's charged message (the per-message usage history), or a
 * title the service asked for (the operator's cost: 0 credits, not in the person's history).
 */
export const usageEvents = sqliteTable(
  "usage_events",
  {
    id: text().primaryKey(),
    // Null once the account is erased (DELETE /me): the row stays, pointing at nobody.
    userId: text().references(() => users.id, { onDelete: "set null" }),
    at: integer({ mode: "timestamp_ms" }).notNull(),
    model: text().notNull(),
    // Kept after the context is deleted: usage history outlives conversations.
    contextId: text(),
    // The reply the credits paid for (its branch); null without a context, and before the tree.
    messageId: text(),
    credits: integer().notNull(),
    kind: text({ enum: ["message", "title"] }).notNull().default("message"),
    // Tokens in and out: the provider's counts, or (tokens_estimated) an estimate; null before they were kept.
    inputTokens: integer(),
    outputTokens: integer(),
    tokensEstimated: integer({ mode: "boolean" }),
    // The API key that paid, if one did (its daily credit limit is counted from these rows).
    keyId: text(),
    // From the call to the first piece of a streamed reply; null for a reply asked for whole.
    firstTokenMs: integer(),
    // `failed`: a model call that failed or timed out (0 credits: it was refunded).
    outcome: text({ enum: ["ok", "failed"] }).notNull().default("ok"),
  },
  (t) => [
    index("usage_events_user_at_idx").on(t.userId, t.at, t.id),
    index("usage_events_at_idx").on(t.at),
    index("usage_events_key_at_idx").on(t.keyId, t.at).where(sql`key_id is not null`),
  ],
);

/** First replies to requests sent with an Idempotency-Key, kept 24 hours. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    key: text().notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    status: integer().notNull(),
    body: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.key] }), index("idempotency_created_idx").on(t.createdAt)],
);

/**
 * A charge whose exchange has not ended: written in the batch that debits, deleted in the
 * batch that stores the exchange (settled) or refunds it (released). One left older than
 * the model timeout plus a margin belongs to a process that died and is refunded to `day`
 * by whoever sees it first (src/features/chat/holds.ts).
 */
export const creditHolds = sqliteTable(
  "credit_holds",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    day: text().notNull(), // the UTC day the credits were charged to, YYYY-MM-DD
    credits: integer().notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    // When the exchange last said it is alive: set with the hold, and renewed while a long
    // reply streams. A hold not renewed for MODEL_TIMEOUT_MS and a margin is abandoned.
    renewedAt: integer({ mode: "timestamp_ms" }).notNull().default(sql`0`),
    // The Idempotency-Key the exchange claimed, freed with the hold.
    claimKey: text(),
    // The API key the exchange was asked with: its daily limit counts held credits too.
    keyId: text(),
  },
  // By person only: every hold is written and deleted by the batches of one message, so each
  // index is a page more in both commits of every message. The release of every person's
  // abandoned holds (the server's start, the daily job) reads the table whole instead: its
  // rows are the exchanges in flight, not the service's history.
  (t) => [index("credit_holds_user_renewed_idx").on(t.userId, t.renewedAt)],
);

/**
 * Model calls (chat messages, regenerations, edits, /v1 completions) an account asked for in
 * one UTC minute (`minute`: ms since the epoch / 60,000), for its plan's requestsPerMinute.
 * Counted by the opening batch, in the same transaction as the debit it guards, so the limit
 * holds across processes, restarts and isolates; the batch also deletes the account's earlier
 * minutes, so an account keeps at most one row (src/features/chat/plan-rate.ts).
 */
export const chatMinutes = sqliteTable(
  "chat_minutes",
  {
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    minute: integer().notNull(),
    count: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.minute] }), index("chat_minutes_minute_idx").on(t.minute)],
);
