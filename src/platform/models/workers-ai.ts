import { asUpstreamFailure, textOf, UpstreamError, usageFrom, type ModelAdapter, type ModelRequest } from "./adapter";
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
    // Text generation takes these settings; it has no stop sequences.
    const { temperature, topP, maxTokens } = request.sampling ?? {};
    // Text only: the catalog never offers tools or images on the binding.
    const messages = request.messages.map((m) => ({ role: m.role, content: textOf(m.content) }));
    const inputs: Record<string, unknown> = { messages, stream };
    if (temperature !== undefined) inputs.temperature = temperature;
    if (topP !== undefined) inputs.top_p = topP;
    if (maxTokens !== undefined) inputs.max_tokens = maxTokens;
    try {
      return await abortable(options.binding.run(options.model, inputs), request.signal);
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      throw new UpstreamError(`Workers AI failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  return {
    async complete(request) {
      const reply = (await run(request, false)) as { response?: unknown; usage?: unknown } | null;
      if (typeof reply?.response !== "string") throw new UpstreamError("the Workers AI reply has no response text");
      request.onOutcome?.({ finishReason: "stop", usage: usageFrom(reply.usage) });
      return reply.response;
    },

    async stream(request) {
      const body = await run(request, true);
      if (!(body instanceof ReadableStream)) throw new UpstreamError("Workers AI did not return a stream");
      const { signal } = request;
      return (async function* () {
        let usage: unknown;
        try {
          for await (const event of readServerSentEvents(body as ReadableStream<Uint8Array>, signal)) {
            if (signal.aborted) throw signal.reason;
            if (event.data === "[DONE]") return request.onOutcome?.({ finishReason: "stop", usage: usageFrom(usage) });
            const chunk = JSON.parse(event.data) as { response?: string; usage?: unknown };
            if (chunk.usage) usage = chunk.usage;
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
