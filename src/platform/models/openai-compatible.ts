import {
  asUpstreamFailure,
  fetchUpstream,
  globalFetch,
  finishReasonFrom,
  upstreamJson,
  upstreamStatusError,
  UpstreamError,
  usageFrom,
  type ModelAdapter,
  type UpstreamFetch,
  type ModelRequest,
} from "./adapter";
import { readServerSentEvents } from "./sse";

export interface OpenAiCompatibleOptions {
  /** How to call the upstream (default: the global fetch). */
  fetch?: UpstreamFetch;
  /** The API base, ending in /v1 (…/chat/completions is appended). */
  baseUrl: string;
  apiKey?: string;
  /** The model's name upstream. */
  model: string;
}

interface CompletionReply {
  choices?: Array<{ message?: { content?: string | null }; delta?: { content?: string | null }; finish_reason?: string | null }>;
  usage?: unknown;
  error?: unknown;
}

/**
 * OpenAI's chat completions protocol, which OpenAI, Groq, Together, OpenRouter, vLLM,
 * Ollama and llama.cpp all speak. Runs on Node and Workers (see `fetch`).
 */
export function openAiCompatibleAdapter(options: OpenAiCompatibleOptions): ModelAdapter {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  const post = async ({ messages, sampling = {}, signal }: ModelRequest, stream: boolean) => {
    const res = await fetchUpstream(options.fetch ?? globalFetch, url, {
      method: "POST",
      headers: stream ? { ...headers, accept: "text/event-stream" } : headers,
      // Unset settings stay out of the body (undefined is dropped), so servers that do not
      // know one are not sent it. max_tokens rather than max_completion_tokens: every
      // compatible server takes it.
      body: JSON.stringify({
        model: options.model,
        messages,
        stream,
        temperature: sampling.temperature,
        top_p: sampling.topP,
        max_tokens: sampling.maxTokens,
        stop: sampling.stop,
      }),
      signal,
    });
    if (!res.ok) throw await upstreamStatusError(res, options.apiKey);
    return res;
  };

  return {
    async complete(request: ModelRequest) {
      const { signal } = request;
      const res = await post(request, false);
      const reply = await upstreamJson<CompletionReply>(res, signal);
      const content = reply.choices?.[0]?.message?.content;
      if (typeof content !== "string") throw new UpstreamError("the upstream reply has no choices[0].message.content");
      request.onOutcome?.({ finishReason: finishReasonFrom(reply.choices?.[0]?.finish_reason), usage: usageFrom(reply.usage) });
      return content;
    },

    async stream(request: ModelRequest) {
      const { signal } = request;
      const res = await post(request, true);
      if (!res.body) throw new UpstreamError("the upstream stream has no body");
      const body = res.body;
      return (async function* () {
        let finished = false;
        let finishReason: string | undefined;
        let usage: unknown;
        const report = () => request.onOutcome?.({ finishReason: finishReasonFrom(finishReason), usage: usageFrom(usage) });
        try {
          for await (const event of readServerSentEvents(body)) {
            if (event.data === "[DONE]") return report();
            let chunk: CompletionReply;
            try {
              chunk = JSON.parse(event.data) as CompletionReply;
            } catch {
              throw new UpstreamError(`the upstream sent an event that is not JSON: ${event.data.slice(0, 100)}`);
            }
            if (chunk.error !== undefined) {
              throw new UpstreamError(`the upstream reported an error mid-stream: ${JSON.stringify(chunk.error).slice(0, 300)}`);
            }
            // Usage may come in a last chunk with no choices (stream_options.include_usage).
            if (chunk.usage) usage = chunk.usage;
            const choice = chunk.choices?.[0];
            if (choice?.delta?.content) yield choice.delta.content;
            if (choice?.finish_reason) {
              finished = true;
              finishReason = choice.finish_reason;
            }
          }
        } catch (err) {
          throw asUpstreamFailure(err, signal);
        }
        // Some servers end without [DONE] after the final chunk; without either, it broke off.
        if (!finished) throw asUpstreamFailure(new UpstreamError("the upstream stream ended before the reply was complete"), signal);
        report();
      })();
    },
  };
}
