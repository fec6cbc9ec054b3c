import { asUpstreamFailure, UpstreamError, type ModelAdapter, type ModelRequest } from "./adapter";
import { readServerSentEvents } from "./sse";

/** The part of the Workers AI binding (`env.AI`) that chat uses. */
export interface WorkersAiBinding {
  run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown>;
}

/** Settles with `work`, or rejects with the signal's reason as soon as it aborts. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * A text-generation model run by the Workers AI binding: `{ response }` when whole, an
 * event stream of `data: {"response":"…"}` ending in `data: [DONE]` when streamed.
 */
export function workersAiAdapter(options: { binding: WorkersAiBinding; model: string }): ModelAdapter {
  const run = async (request: ModelRequest, stream: boolean) => {
    try {
      return await abortable(options.binding.run(options.model, { messages: request.messages, stream }), request.signal);
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      throw new UpstreamError(`Workers AI failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  return {
    async complete(request) {
      const reply = (await run(request, false)) as { response?: unknown } | null;
      if (typeof reply?.response !== "string") throw new UpstreamError("the Workers AI reply has no response text");
      return reply.response;
    },

    async stream(request) {
      const body = await run(request, true);
      if (!(body instanceof ReadableStream)) throw new UpstreamError("Workers AI did not return a stream");
      const { signal } = request;
      return (async function* () {
        try {
          for await (const event of readServerSentEvents(body as ReadableStream<Uint8Array>, signal)) {
            if (signal.aborted) throw signal.reason;
            if (event.data === "[DONE]") return;
            const chunk = JSON.parse(event.data) as { response?: string };
            if (chunk.response) yield chunk.response;
          }
          throw new UpstreamError("the Workers AI stream ended before [DONE]");
        } catch (err) {
          throw asUpstreamFailure(err, signal);
        }
      })();
    },
  };
}
