import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

/**
 * Credits used per user per UTC day. A new day needs no job: its row does not exist yet.
 * Debits and refunds are single conditional statements (src/services/credits.ts).
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

/** One row per charged message: the per-message usage history. */
export const usageEvents = sqliteTable(
  "usage_events",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    at: integer({ mode: "timestamp_ms" }).notNull(),
    model: text().notNull(),
    // Kept after the context is deleted: usage history outlives conversations.
    contextId: text(),
    credits: integer().notNull(),
  },
  (t) => [index("usage_events_user_at_idx").on(t.userId, t.at, t.id)],
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
