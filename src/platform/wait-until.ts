// Only Workers give a request an ExecutionContext, and they say who they are in
// navigator.userAgent (Node 20 has no navigator). Elsewhere Hono's getter throws: on Node,
// building that Error cost about 15 µs of CPU per call, twice for each chat message (29 µs
// a message in the chat bench's CPU profile), to learn what is known at start.
const hasExecutionContexts = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers";

/**
 * Lets work outlive the reply: Workers' `waitUntil`, so the isolate is kept until it is
 * done. Returns false where there is no ExecutionContext (Node), where a promise runs on
 * by itself and the caller decides whether to await it.
 */
export function waitUntil(c: { executionCtx: { waitUntil(p: Promise<unknown>): void } }, promise: Promise<unknown>): boolean {
  if (!hasExecutionContexts) return false;
  let ctx: { waitUntil(p: Promise<unknown>): void };
  try {
    ctx = c.executionCtx;
  } catch {
    return false; // A request made without one (app.request in a test).
  }
  ctx.waitUntil(promise);
  return true;
}
