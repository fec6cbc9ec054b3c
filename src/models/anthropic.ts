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

export interface AnthropicOptions {
  /** The API origin, e.g. https://api.anthropic.com (…/v1/messages is appended). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Longest reply asked for; the Messages API requires a bound. */
  maxTokens?: number;
}

const API_VERSION = "2023-06-01";

interface MessagesReply {
  content?: Array<{ type: string; text?: string }>;
}

interface StreamEvent {
  type?: string;
  delta?: { type?: string; text?: string };
  error?: unknown;
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

  const post = async (messages: ChatMessage[], stream: boolean, signal: AbortSignal) => {
    const res = await fetchUpstream(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": options.apiKey,
        "anthropic-version": API_VERSION,
        accept: stream ? "text/event-stream" : "application/json",
      },
      body: JSON.stringify({
        model: options.model,
        max_tokens: options.maxTokens ?? 4096,
        ...toAnthropicMessages(messages),
        stream,
      }),
      signal,
    });
    if (!res.ok) throw await upstreamStatusError(res, options.apiKey);
    return res;
  };

  return {
    async complete({ messages, signal }: ModelRequest) {
      const res = await post(messages, false, signal);
      let reply: MessagesReply;
      try {
        reply = (await res.json()) as MessagesReply;
      } catch (err) {
        throw asUpstreamFailure(err, signal);
      }
      if (!Array.isArray(reply.content)) throw new UpstreamError("the Messages API reply has no content");
      return reply.content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
    },

    async stream({ messages, signal }: ModelRequest) {
      const res = await post(messages, true, signal);
      if (!res.body) throw new UpstreamError("the Messages API stream has no body");
      const body = res.body;
      return (async function* () {
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
            if (type === "message_stop") return;
          }
        } catch (err) {
          throw asUpstreamFailure(err, signal);
        }
        throw asUpstreamFailure(new UpstreamError("the Messages API stream ended before message_stop"), signal);
      })();
    },
  };
}
