import type { Db } from "../platform/db";
import type { Logger } from "../platform/log";
import { INDEX_BATCH, indexPendingSearch } from "../features/contexts/search";

/**
 * Keeps the list of search entries waiting to be indexed short, on a server that lives
 * long enough to (Node; the Worker's daily job does it too): every `everyMs`, indexes
 * waiting entries until none are left. Searches never wait for it: each indexes its
 * owner's waiting entries itself. Returns a function that stops it.
 */
export function keepSearchIndexed(deps: { db: Db; log: Logger }, everyMs = 250): () => void {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      while ((await indexPendingSearch(deps.db)) === INDEX_BATCH);
    } catch (err) {
      deps.log.error("could not index search entries", { err });
    } finally {
      running = false;
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
