import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./users";

export const groups = sqliteTable(
  "groups",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text().notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    updatedAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("groups_user_name_idx").on(t.userId, t.name)],
);

export const contexts = sqliteTable(
  "contexts",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    groupId: text().references(() => groups.id, { onDelete: "set null" }),
    name: text().notNull(),
    messageCount: integer().notNull().default(0),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    updatedAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    // Listing is "most recently updated first" with a keyset cursor on (updatedAt, id).
    index("contexts_user_updated_idx").on(t.userId, t.updatedAt, t.id),
    index("contexts_group_idx").on(t.groupId),
  ],
);

/**
 * Messages are ordered by (createdAt, id); the chat service gives a reply a createdAt
 * strictly after its user message.
 */
export const messages = sqliteTable(
  "messages",
  {
    id: text().primaryKey(),
    contextId: text()
      .notNull()
      .references(() => contexts.id, { onDelete: "cascade" }),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text({ enum: ["user", "assistant"] }).notNull(),
    content: text().notNull(),
    model: text(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("messages_context_created_idx").on(t.contextId, t.createdAt, t.id)],
);

/** A public, read-only snapshot of a context; at most one live link per context. */
export const shares = sqliteTable(
  "shares",
  {
    token: text().primaryKey(),
    contextId: text()
      .notNull()
      .references(() => contexts.id, { onDelete: "cascade" }),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text().notNull(),
    snapshot: text({ mode: "json" }).notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    expiresAt: integer({ mode: "timestamp_ms" }),
  },
  (t) => [uniqueIndex("shares_context_idx").on(t.contextId), index("shares_user_idx").on(t.userId)],
);
