// How long a model call may go quiet before it counts as failed, and how it is stopped.

/**
 * The model call's signal: aborted by a timeout that restarts whenever the upstream makes
 * progress, by the caller's signal, or by `stop`. One controller for all three: on Node 20
 * each AbortSignal (and AbortSignal.any) costs a few µs of a message's CPU.
 */
export function createDeadline(ms: number, caller: AbortSignal) {
  const controller = new AbortController();
  let timedOut = false;
  const fire = () => {
    if (controller.signal.aborted) return;
    timedOut = true;
    controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  };
  const callerAborted = () => controller.abort(caller.reason);
  if (caller.aborted) callerAborted();
  else caller.addEventListener("abort", callerAborted, { once: true });
  let handle = setTimeout(fire, ms);
  return {
    signal: controller.signal,
    touch() {
      clearTimeout(handle);
      if (!controller.signal.aborted) handle = setTimeout(fire, ms);
    },
    /** The call is over: no timeout, and the caller's signal is let go. */
    clear() {
      clearTimeout(handle);
      caller.removeEventListener("abort", callerAborted);
    },
    stop: (reason: unknown) => controller.abort(reason),
    get timedOut() {
      return timedOut;
    },
  };
}
export type Deadline = ReturnType<typeof createDeadline>;
