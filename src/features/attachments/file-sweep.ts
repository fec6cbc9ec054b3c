import { eq, sql } from "drizzle-orm";
import type { BlobPage } from "../../platform/blob-store";
import { attachments, jobCursors } from "../../../schema/index";
import type { FileDeps } from "./attachments";

// ---------------------------------------------------------------------------------------
// The daily sweep of stored files that no attachment row names. Rows go first and files
// after them (a context's or an account's deletion, an unsent upload's expiry), so a crash
// in between, or a store failing at that moment, leaves a file nothing points at any more.
// Each run looks at a bounded number of files, from where the last run stopped (a row in
// job_cursors), so a large store is swept over several days instead of in one long run.
// ---------------------------------------------------------------------------------------

/** The most stored files one run looks at: on Workers, about 10 R2 list calls and 10 queries. */
export const SWEEP_FILES_PER_RUN = 10_000;
/** A file younger than this is left alone: its upload may not have written its row yet. */
export const SWEEP_MIN_AGE_MS = 3600_000;
/** The store's keys asked for at once (R2 lists at most 1000). */
const PAGE = 1000;
const CURSOR = "attachment-files";

export interface SweepResult {
  /** Stored files looked at in this run. */
  examinedFiles: number;
  /** Of those, files no attachment row names, older than SWEEP_MIN_AGE_MS, removed. */
  removedUnnamedFiles: number;
}

/**
 * Removes up to SWEEP_FILES_PER_RUN stored files' worth of files no row names, resuming
 * after the last key the previous run looked at and starting over once the store is done.
 * `at` is the run's time (the job's scheduled time): files stored within SWEEP_MIN_AGE_MS
 * of it stay. A file that cannot be removed is logged and left for a later pass.
 */
export async function sweepUnnamedFiles(deps: FileDeps, at: Date, limit = SWEEP_FILES_PER_RUN): Promise<SweepResult> {
  const result: SweepResult = { examinedFiles: 0, removedUnnamedFiles: 0 };
  const { blobs, db } = deps;
  if (!blobs) return result;
  const [saved] = await db.select({ position: jobCursors.position }).from(jobCursors).where(eq(jobCursors.name, CURSOR));
  let after = saved?.position;
  for (;;) {
    const page = await blobs.list({ ...(after ? { after } : {}), limit: Math.min(PAGE, limit - result.examinedFiles) });
    result.examinedFiles += page.items.length;
    result.removedUnnamedFiles += await removeUnnamed(deps, page, at);
    after = page.done ? undefined : (page.items.at(-1)?.key ?? after);
    // An empty page that is not the last would list the same keys again: the next run goes on.
    if (page.done || page.items.length === 0 || result.examinedFiles >= limit) break;
  }
  if (after === undefined) await db.delete(jobCursors).where(eq(jobCursors.name, CURSOR));
  else await db.insert(jobCursors).values({ name: CURSOR, position: after }).onConflictDoUpdate({ target: jobCursors.name, set: { position: after } });
  return result;
}

/** Removes the page's files old enough that no row names; how many. */
async function removeUnnamed(deps: FileDeps, page: BlobPage, at: Date): Promise<number> {
  const before = at.getTime() - SWEEP_MIN_AGE_MS;
  const old = page.items.filter((i) => i.storedAt.getTime() <= before).map((i) => i.key);
  if (old.length === 0) return 0;
  // One statement with one bound value, however many keys (D1 binds at most 100 values).
  const named = await deps.db.all<{ key: string }>(
    sql`select j.value as key from json_each(${JSON.stringify(old)}) j where exists (select 1 from ${attachments} a where a.sha256 = j.value)`,
  );
  const keep = new Set(named.map((r) => r.key));
  let removed = 0;
  for (const key of old.filter((k) => !keep.has(k))) {
    try {
      await deps.blobs!.delete(key);
      removed++;
    } catch (err) {
      deps.log.warn("could not remove an attachment's file that no row names", { sha256: key, err });
    }
  }
  if (removed > 0) deps.log.info("removed attachments' files that no row named", { removed });
  return removed;
}
