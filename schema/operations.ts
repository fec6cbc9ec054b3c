import { blob, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Written and emptied by every GET /health, in one batch: a row of a page's size proves that
 * the database can take new pages (a full disk, or a read-only file, fails it). Always empty
 * between two checks.
 */
export const healthProbe = sqliteTable("health_probe", {
  id: integer().primaryKey(),
  pad: blob({ mode: "buffer" }).notNull(),
});

/**
 * Where a job that works through something in parts, a bounded part per run, stopped: the
 * daily sweep of attachments' files that no row names (`attachment-files`) resumes after the
 * last key it looked at. No row: the next run starts from the beginning.
 */
export const jobCursors = sqliteTable("job_cursors", {
  name: text().primaryKey(),
  position: text().notNull(),
});
