import {
  asUpstreamFailure,
  fetchUpstream,
  globalFetch,
  finishReasonFrom,
  upstreamJson,
  upstreamStatusError,
  UpstreamError,
  type ChatMessage,
  type ModelAdapter,
  type UpstreamFetch,
  type ModelOutcome,
  type ModelRequest,
  type Sampling,
} from "./adapter";
import { readServerSentEvents } from "./sse";

export interface AnthropicOptions {
  /** How to call the upstream (default: the global fetch). */
  fetch?: UpstreamFetch;
  /** The API origin, e.g. https://api.anthropic.com (…/v1/messages is appended). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Longest reply asked for; the Messages API requires a bound. */
  maxTokens?: number;
}

const API_VERSION = "2023-06-01";

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
}

interface MessagesReply {
  content?: Array<{ type: string; text?: string }>;
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

interface StreamEvent {
  type?: string;
  delta?: { type?: string; text?: string; stop_reason?: string | null };
  message?: { usage?: AnthropicUsage };
  usage?: AnthropicUsage;
  error?: unknown;
}

/** The ModelOutcome of a reply's stop_reason and usage (input tokens from message_start when streamed). */
function outcomeOf(stopReason: string | null | undefined, input: number | undefined, output: number | undefined): ModelOutcome {
  return {
    finishReason: finishReasonFrom(stopReason),
    usage: typeof input === "number" && typeof output === "number" ? { promptTokens: input, completionTokens: output } : undefined,
  };
}

/**
 * Sampling on the Messages API's terms: temperature is 0..1 there (higher values are
 * clamped to 1), newer models refuse temperature and top_p together (temperature wins),
 * stop sequences must hold more than whitespace, and max_tokens is required.
 */
export function toAnthropicSampling(sampling: Sampling, defaultMaxTokens: number) {
  const stop = sampling.stop?.filter((s) => s.trim() !== "");
  return {
    max_tokens: sampling.maxTokens ?? defaultMaxTokens,
    temperature: sampling.temperature === undefined ? undefined : Math.min(sampling.temperature, 1),
    top_p: sampling.temperature === undefined ? sampling.topP : undefined,
    stop_sequences: stop && stop.length > 0 ? stop : undefined,
  };
}

/**
 * The Messages API wants system text apart, turns that start with the user and alternate;
 * the chat history is trimmed oldest-first, so it may start with a reply or repeat a role.
 */
export function toAnthropicMessages(messages: ChatMessage[]) {
  const system = messages.filter((m) => m.role === "system").map((m) => m.content).join("\n\n");
  const turns: Array<{ role: "user" | "assistant"; content: string }> = [];
  for (const m of messages) {
    if (m.role === "system") continue;
    const last = turns[turns.length - 1];
    if (last?.role === m.role) last.content += `\n\n${m.content}`;
    else if (turns.length > 0 || m.role === "user") turns.push({ role: m.role, content: m.content });
  }
  return { system: system || undefined, messages: turns };
}

/** Anthropic's Messages API (Claude), streaming or not. */
export function anthropicAdapter(options: AnthropicOptions): ModelAdapter {
  const url = `${options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`;

  const post = async ({ messages, sampling = {}, signal }: ModelRequest, stream: boolean) => {
    const res = await fetchUpstream(options.fetch ?? globalFetch, url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": options.apiKey,
        "anthropic-version": API_VERSION,
        accept: stream ? "text/event-stream" : "application/json",
      },
      body: JSON.stringify({
        model: options.model,
        ...toAnthropicSampling(sampling, options.maxTokens ?? 4096),
        ...toAnthropicMessages(messages),
        stream,
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
      const reply = await upstreamJson<MessagesReply>(res, signal);
      if (!Array.isArray(reply.content)) throw new UpstreamError("the Messages API reply has no content");
      request.onOutcome?.(outcomeOf(reply.stop_reason, reply.usage?.input_tokens, reply.usage?.output_tokens));
      return reply.content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
    },

    async stream(request: ModelRequest) {
      const { signal } = request;
      const res = await post(request, true);
      if (!res.body) throw new UpstreamError("the Messages API stream has no body");
      const body = res.body;
      return (async function* () {
        let stopReason: string | null | undefined;
        let inputTokens: number | undefined;
        let outputTokens: number | undefined;
        try {
          for await (const event of readServerSentEvents(body)) {
            let data: StreamEvent;
            try {
              data = JSON.parse(event.data) as StreamEvent;
            } catch {
              throw new UpstreamError(`the Messages API sent an event that is not JSON: ${event.data.slice(0, 100)}`);
            }
            const type = data.type ?? event.event;
            if (type === "error") {
              throw new UpstreamError(`the Messages API reported an error mid-stream: ${JSON.stringify(data.error).slice(0, 300)}`);
            }
            if (type === "content_block_delta" && data.delta?.type === "text_delta" && data.delta.text) yield data.delta.text;
            if (type === "message_start") inputTokens = data.message?.usage?.input_tokens;
            if (type === "message_delta") {
              stopReason = data.delta?.stop_reason ?? stopReason;
              outputTokens = data.usage?.output_tokens ?? outputTokens;
            }
            if (type === "message_stop") return request.onOutcome?.(outcomeOf(stopReason, inputTokens, outputTokens));
          }
        } catch (err) {
          throw asUpstreamFailure(err, signal);
        }
        throw asUpstreamFailure(new UpstreamError("the Messages API stream ended before message_stop"), signal);
      })();
    },
  };
}
