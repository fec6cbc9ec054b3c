import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * What admins did (the operator's console), one row per action, written in the same batch as
 * the action itself. Ids are kept as text without foreign keys: the record outlives the
 * accounts it names.
 */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: text().primaryKey(),
    at: integer({ mode: "timestamp_ms" }).notNull(),
    actorId: text().notNull(),
    action: text().notNull(),
    // The account acted on (null for an invite's making or revoking).
    targetId: text(),
    details: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [index("audit_events_at_idx").on(t.at, t.id), index("audit_events_target_idx").on(t.targetId, t.at)],
);
