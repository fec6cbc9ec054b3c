import { sql } from "drizzle-orm";
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
    /**
     * Who named the context: the person (never renamed by the service), the first message's
     * words (until the model's title replaces them), or the model.
     */
    nameSource: text({ enum: ["person", "message", "model"] }).notNull().default("person"),
    messageCount: integer().notNull().default(0),
    /** The last message of the active branch; null while the context has no messages. */
    leafId: text(),
    /** A system prompt sent to the model first, on every message. */
    instructions: text(),
    pinned: integer({ mode: "boolean" }).notNull().default(false),
    archived: integer({ mode: "boolean" }).notNull().default(false),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    updatedAt: integer({ mode: "timestamp_ms" }).notNull(),
    /**
     * An imported context's id in the file it came from (an export's context id, a ChatGPT
     * conversation's id): importing that file again skips it. Null for a context made here.
     */
    importedFrom: text(),
  },
  (t) => [
    // Listing is "most recently updated first" with a keyset cursor on (updatedAt, id).
    index("contexts_user_updated_idx").on(t.userId, t.updatedAt, t.id),
    // The navigator's pinned list and the archived view, in the same order.
    index("contexts_user_flags_idx").on(t.userId, t.archived, t.pinned, t.updatedAt, t.id),
    // Partial, as the next one: only the contexts in a group (or imported) are in it, so a
    // new conversation, made in none, writes neither.
    index("contexts_group_idx")
      .on(t.groupId)
      .where(sql`group_id is not null`),
    // An import looks up which of the file's contexts this person has already.
    index("contexts_user_imported_idx")
      .on(t.userId, t.importedFrom)
      .where(sql`imported_from is not null`),
  ],
);

/**
 * A context's messages form a tree: each names the message it follows (`parentId`, null for
 * a first message), so regenerating a reply or editing a message makes a sibling. Siblings
 * are ordered by (createdAt, id); the chat service gives a reply a createdAt strictly
 * after its user message.
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
    // No foreign key: a self-reference would make drizzle-kit rebuild the table, which drops
    // its search triggers; a context's messages are deleted together anyway.
    parentId: text(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    /**
     * A reply's end: `done`, `stopped` by the person (what was written is kept), or `failed`
     * (the model failed or its process died; nothing charged, the text so far kept).
     */
    status: text({ enum: ["done", "stopped", "failed"] }).notNull().default("done"),
    /** The person's thumbs up (1) or down (-1) on a reply; null: none. */
    rating: integer(),
  },
  (t) => [
    // A message's siblings (the children of its parent, the first messages when null), in
    // order; by its first column, a context's messages. The one index by context: a second,
    // by (context, time), was two pages more in every message's commit and served only a
    // context's export, which sorts the messages it reads anyway.
    index("messages_context_parent_idx").on(t.contextId, t.parentId, t.createdAt, t.id),
    // A person's messages, for their account's erasure: its delete, and the check of the
    // users row's foreign key, would otherwise read every person's messages. With the
    // context second, a statement naming both (a context's delete, its export, its
    // attachments) reads that context's messages, not all of the person's.
    index("messages_user_idx").on(t.userId, t.contextId),
    // The rated replies with what the admin's usage report counts of them (its thumbs up and
    // down), by time and by person: few of the messages, so these are small, and the report
    // reads only them.
    index("messages_rated_idx")
      .on(t.createdAt, t.rating, t.status, t.model)
      .where(sql`rating is not null`),
    index("messages_rated_user_idx")
      .on(t.userId, t.createdAt, t.rating, t.status)
      .where(sql`rating is not null`),
  ],
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

/**
 * A reply still being written, asked for in the background (`background: true`): it runs
 * to its end whether or not its client stays, then becomes a message (done, stopped or
 * failed) in the batch that stores it, which deletes this row. The text so far is saved
 * every second, so that any process can follow it (GET …/stream) and a process that dies
 * leaves it to be kept as failed when its credit hold is released. `stopRequested` is how
 * a stop asked of another process (another Workers isolate) reaches the one writing it.
 */
export const runningReplies = sqliteTable(
  "running_replies",
  {
    id: text().primaryKey(),
    contextId: text()
      .notNull()
      .references(() => contexts.id, { onDelete: "cascade" }),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The user message it answers. */
    parentId: text().notNull(),
    /** The model asked for (the one answering, once a fallback has begun). */
    model: text().notNull(),
    /** The credit hold of its exchange (src/features/chat/holds.ts). */
    holdId: text().notNull(),
    text: text().notNull().default(""),
    stopRequested: integer({ mode: "boolean" }).notNull().default(false),
    startedAt: integer({ mode: "timestamp_ms" }).notNull(),
    updatedAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  // By user too: every message releases its user's abandoned replies first (chat/holds.ts),
  // which without it reads every reply in flight on the service.
  (t) => [index("running_replies_context_idx").on(t.contextId), index("running_replies_hold_idx").on(t.holdId), index("running_replies_user_idx").on(t.userId)],
);
