import { blob, integer, sqliteTable } from "drizzle-orm/sqlite-core";

/**
 * Written and emptied by every GET /health, in one batch: a row of a page's size proves that
 * the database can take new pages (a full disk, or a read-only file, fails it). Always empty
 * between two checks.
 */
export const healthProbe = sqliteTable("health_probe", {
  id: integer().primaryKey(),
  pad: blob({ mode: "buffer" }).notNull(),
});
