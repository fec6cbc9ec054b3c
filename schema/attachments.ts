import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { messages } from "./contexts";
import { users } from "./users";

/**
 * A file a person uploaded: its metadata and, for a document, its extracted text. The
 * bytes live beside the database (files on Node, R2 on Workers), under their SHA-256, so
 * the same file uploaded twice is stored once; each upload is its own row, counted against
 * its owner's quota.
 */
export const attachments = sqliteTable(
  "attachments",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text().notNull(),
    /** The type read from the bytes (never the client's word). */
    type: text().notNull(),
    kind: text({ enum: ["image", "document"] }).notNull(),
    size: integer().notNull(),
    /** The bytes' SHA-256, hex: the key of the stored file. */
    sha256: text().notNull(),
    /** A PDF's page count. */
    pages: integer(),
    /** A document's text, as the model is sent it: at most MAX_STORED_TEXT_CHARS of it (D1 keeps a value to 2 MB). */
    text: text(),
    /** How long a document's whole text is, in characters (more than `text` holds when it was cut at upload). */
    chars: integer(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("attachments_user_created_idx").on(t.userId, t.createdAt), index("attachments_sha256_idx").on(t.sha256)],
);

/** Which attachments a (user) message carries, in the order they were sent. */
export const messageAttachments = sqliteTable(
  "message_attachments",
  {
    messageId: text()
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    attachmentId: text()
      .notNull()
      .references(() => attachments.id, { onDelete: "cascade" }),
    position: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.attachmentId] }), index("message_attachments_attachment_idx").on(t.attachmentId)],
);
