// The Markdown worker (prepare-worker.ts), started by itself: the page's start (app.tsx) starts
// it before the chat's or the share page's code has arrived, so that the worker's own code and
// the renderer it loads come in beside them; prepare.ts then talks to it.

let worker: Worker | null | undefined;
/** An error before prepare.ts listened: it learns of it here. */
let failedEarly = false;

/** The one worker (started on the first call), or null where workers cannot start. */
export function startPrepareWorker(): Worker | null {
  if (worker !== undefined) return worker;
  try {
    worker = new Worker(new URL("./prepare-worker.ts", import.meta.url), { type: "module", name: "prepare" });
    worker.addEventListener("error", () => (failedEarly = true), { once: true });
  } catch {
    worker = null;
  }
  return worker;
}

/** Whether the worker failed before anyone listened for it. */
export const workerFailedEarly = () => failedEarly;
