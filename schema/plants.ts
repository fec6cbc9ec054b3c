import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./users";

/**
 * Each user has their own id space. `id` is a signed 64-bit integer: it is written through
 * `CAST(? AS INTEGER)` from its decimal text and read back as text, so it stays exact on
 * every driver (D1 returns integers as doubles). See src/features/plants/plants.ts.
 */
export const plants = sqliteTable(
  "plants",
  {
    ownerId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    id: integer({ mode: "number" }).notNull(),
    name: text().notNull(),
    tag: text(),
  },
  (t) => [primaryKey({ columns: [t.ownerId, t.id] })],
);
