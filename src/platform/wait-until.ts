/**
 * Lets work outlive the reply: Workers' `waitUntil`, so the isolate is kept until it is
 * done. Returns false where there is no ExecutionContext (Node), where a promise runs on
 * by itself and the caller decides whether to await it.
 */
export function waitUntil(c: { executionCtx: { waitUntil(p: Promise<unknown>): void } }, promise: Promise<unknown>): boolean {
  let ctx: { waitUntil(p: Promise<unknown>): void };
  try {
    ctx = c.executionCtx;
  } catch {
    return false; // No ExecutionContext outside Workers.
  }
  ctx.waitUntil(promise);
  return true;
}
