import {
  asUpstreamFailure,
  fetchUpstream,
  upstreamStatusError,
  UpstreamError,
  type ChatMessage,
  type ModelAdapter,
  type ModelRequest,
} from "./adapter";
import { readServerSentEvents } from "./sse";

export interface OpenAiCompatibleOptions {
  /** The API base, ending in /v1 (…/chat/completions is appended). */
  baseUrl: string;
  apiKey?: string;
  /** The model's name upstream. */
  model: string;
}

interface CompletionReply {
  choices?: Array<{ message?: { content?: string | null }; delta?: { content?: string | null }; finish_reason?: string | null }>;
  error?: unknown;
}

/**
 * OpenAI's chat completions protocol, which OpenAI, Groq, Together, OpenRouter, vLLM,
 * Ollama and llama.cpp all speak. Uses the global fetch, so it runs on Node and Workers.
 */
export function openAiCompatibleAdapter(options: OpenAiCompatibleOptions): ModelAdapter {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  const post = async (messages: ChatMessage[], stream: boolean, signal: AbortSignal) => {
    const res = await fetchUpstream(url, {
      method: "POST",
      headers: stream ? { ...headers, accept: "text/event-stream" } : headers,
      body: JSON.stringify({ model: options.model, messages, stream }),
      signal,
    });
    if (!res.ok) throw await upstreamStatusError(res, options.apiKey);
    return res;
  };

  return {
    async complete({ messages, signal }: ModelRequest) {
      const res = await post(messages, false, signal);
      let reply: CompletionReply;
      try {
        reply = (await res.json()) as CompletionReply;
      } catch (err) {
        throw asUpstreamFailure(err, signal);
      }
      const content = reply.choices?.[0]?.message?.content;
      if (typeof content !== "string") throw new UpstreamError("the upstream reply has no choices[0].message.content");
      return content;
    },

    async stream({ messages, signal }: ModelRequest) {
      const res = await post(messages, true, signal);
      if (!res.body) throw new UpstreamError("the upstream stream has no body");
      const body = res.body;
      return (async function* () {
        let finished = false;
        try {
          for await (const event of readServerSentEvents(body)) {
            if (event.data === "[DONE]") return;
            let chunk: CompletionReply;
            try {
              chunk = JSON.parse(event.data) as CompletionReply;
            } catch {
              throw new UpstreamError(`the upstream sent an event that is not JSON: ${event.data.slice(0, 100)}`);
            }
            if (chunk.error !== undefined) {
              throw new UpstreamError(`the upstream reported an error mid-stream: ${JSON.stringify(chunk.error).slice(0, 300)}`);
            }
            const choice = chunk.choices?.[0];
            if (choice?.delta?.content) yield choice.delta.content;
            if (choice?.finish_reason) finished = true;
          }
        } catch (err) {
          throw asUpstreamFailure(err, signal);
        }
        // Some servers end without [DONE] after the final chunk; without either, it broke off.
        if (!finished) throw asUpstreamFailure(new UpstreamError("the upstream stream ended before the reply was complete"), signal);
      })();
    },
  };
}
