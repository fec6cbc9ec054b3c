import type { Db } from "../platform/db";
import type { Logger } from "../platform/log";
import { INDEX_BATCH, indexPendingSearch } from "../features/contexts/search";

/** The longest wait between two tries while indexing fails (a read-only or full disk). */
export const MAX_INDEX_BACKOFF_MS = 60_000;

/**
 * Keeps the list of search entries waiting to be indexed short, on a server that lives
 * long enough to (Node; the Worker's daily job does it too): every `everyMs`, indexes
 * waiting entries until none are left. Searches never wait for it: each indexes its
 * owner's waiting entries itself. While indexing fails (the database read-only, the disk
 * full), it tries again after twice the wait each time, up to a minute, logging each
 * failure, and goes back to `everyMs` once a try succeeds. Returns a function that stops it.
 */
export function keepSearchIndexed(deps: { db: Db; log: Logger }, everyMs = 250): () => void {
  let wait = everyMs;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = async () => {
    try {
      while ((await indexPendingSearch(deps.db)) === INDEX_BATCH);
      wait = everyMs;
    } catch (err) {
      wait = Math.min(wait * 2, MAX_INDEX_BACKOFF_MS);
      deps.log.error("could not index search entries", { err, retryInMs: wait });
    }
    if (stopped) return;
    timer = setTimeout(tick, wait);
    timer.unref();
  };
  timer = setTimeout(tick, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
