import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * How fast each model answered its recent exchanges on this deployment: one row per stored
 * exchange, written by the batch that stores it (no round trip of its own), pruned by the
 * daily job. GET /models shows the medians (src/features/chat/model-speed.ts).
 */
export const modelTimings = sqliteTable(
  "model_timings",
  {
    // The rowid itself: a text key would be one more B-tree the batch of every message writes.
    id: integer().primaryKey(),
    /** The model that answered (a fallback, when the one asked for failed first). */
    model: text().notNull(),
    at: integer({ mode: "timestamp_ms" }).notNull(),
    /** From the call to the first piece of a streamed reply; null for a reply asked for whole. */
    firstTokenMs: integer(),
    /** From the call to the reply's end. */
    durationMs: integer().notNull(),
    /** The provider's count, else an estimate. */
    outputTokens: integer().notNull(),
  },
  (t) => [index("model_timings_model_at_idx").on(t.model, t.at)],
);
