import {
  asUpstreamFailure,
  fetchUpstream,
  globalFetch,
  finishReasonFrom,
  toolCallCollector,
  upstreamJson,
  upstreamStatusError,
  UpstreamError,
  usageFrom,
  type ChatMessage,
  type ModelAdapter,
  type ModelRequest,
  type StreamPiece,
  type ToolCall,
  type ToolCallDelta,
  type UpstreamFetch,
} from "./adapter";
import { readServerSentEvents, type ByteStream } from "./sse";

export interface OpenAiCompatibleOptions {
  /** How to call the upstream (default: the global fetch). */
  fetch?: UpstreamFetch;
  /** The API base, ending in /v1 (…/chat/completions is appended). */
  baseUrl: string;
  apiKey?: string;
  /** The model's name upstream. */
  model: string;
}

interface WireToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface CompletionReply {
  choices?: Array<{
    message?: { content?: string | null; tool_calls?: WireToolCall[] | null };
    delta?: { content?: string | null; tool_calls?: WireToolCall[] | null };
    finish_reason?: string | null;
  }>;
  usage?: unknown;
  error?: unknown;
}

/** A message in OpenAI's wire shape. */
export function toOpenAiMessage(m: ChatMessage): Record<string, unknown> {
  const content =
    typeof m.content === "string"
      ? m.content
      : m.content.map((p) => (p.type === "text" ? { type: "text", text: p.text } : { type: "image_url", image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } }));
  if (m.role === "tool") return { role: "tool", tool_call_id: m.toolCallId, content };
  if (m.role === "assistant" && m.toolCalls && m.toolCalls.length > 0) {
    return {
      role: "assistant",
      // OpenAI takes null content beside tool calls; some servers refuse an empty string.
      content: content === "" ? null : content,
      tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
    };
  }
  return { role: m.role, content };
}

/** The request's tools, tool choice and response format in OpenAI's shape; nothing when unset. */
function toolingBody(request: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (request.tools && request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      type: "function",
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        ...(t.parameters !== undefined ? { parameters: t.parameters } : {}),
        ...(t.strict !== undefined ? { strict: t.strict } : {}),
      },
    }));
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  const choice = request.toolChoice;
  if (choice !== undefined) body.tool_choice = typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
  const format = request.responseFormat;
  if (format && format.type !== "text") {
    body.response_format =
      format.type === "json_object"
        ? { type: "json_object" }
        : {
            type: "json_schema",
            json_schema: {
              name: format.name,
              ...(format.description !== undefined ? { description: format.description } : {}),
              ...(format.schema !== undefined ? { schema: format.schema } : {}),
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
            },
          };
  }
  return body;
}

/** Whole tool calls from a reply's `message.tool_calls`. */
function toolCallsOf(calls: WireToolCall[] | null | undefined): ToolCall[] | undefined {
  if (!Array.isArray(calls) || calls.length === 0) return undefined;
  return calls.map((c, i) => ({ id: c.id ?? `call_${i}`, name: c.function?.name ?? "", arguments: c.function?.arguments ?? "" }));
}

/**
 * OpenAI's chat completions protocol, which OpenAI, Groq, Together, OpenRouter, vLLM,
 * Ollama and llama.cpp all speak. Runs on Node and Workers (see `fetch`).
 */
export function openAiCompatibleAdapter(options: OpenAiCompatibleOptions): ModelAdapter {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const upstream: Upstream = { options, url, headers };
  return {
    complete: (request) => completeChat(upstream, request),
    stream: (request) => streamChat(upstream, request),
  };
}

/** Where and how an adapter posts: its options, resolved once. */
interface Upstream {
  options: OpenAiCompatibleOptions;
  url: string;
  headers: Record<string, string>;
}

/** Posts a chat completion request; a reply that is not 2xx is an UpstreamError. */
async function postCompletion({ options, url, headers }: Upstream, request: ModelRequest, stream: boolean) {
  const { messages, sampling = {}, signal } = request;
  const res = await fetchUpstream(options.fetch ?? globalFetch, url, {
    method: "POST",
    headers: stream ? { ...headers, accept: "text/event-stream" } : headers,
    // Unset settings stay out of the body (undefined is dropped), so servers that do not
    // know one are not sent it. max_tokens rather than max_completion_tokens: every
    // compatible server takes it.
    body: JSON.stringify({
      model: options.model,
      messages: messages.map(toOpenAiMessage),
      stream,
      // The provider's own token counts in a stream's last chunk (OpenAI, vLLM, Ollama, Groq…): kept as usage, not an estimate.
      stream_options: stream ? { include_usage: true } : undefined,
      temperature: sampling.temperature,
      top_p: sampling.topP,
      max_tokens: sampling.maxTokens,
      stop: sampling.stop,
      ...toolingBody(request),
    }),
    signal,
  });
  if (!res.ok) throw await upstreamStatusError(res, options.apiKey);
  return res;
}

async function completeChat(upstream: Upstream, request: ModelRequest): Promise<string> {
  const res = await postCompletion(upstream, request, false);
  const reply = await upstreamJson<CompletionReply>(res, request.signal);
  const message = reply.choices?.[0]?.message;
  const toolCalls = toolCallsOf(message?.tool_calls);
  const content = message?.content ?? (toolCalls ? "" : undefined);
  if (typeof content !== "string") throw new UpstreamError("the upstream reply has no choices[0].message.content");
  request.onOutcome?.({ finishReason: finishReasonFrom(reply.choices?.[0]?.finish_reason), usage: usageFrom(reply.usage), toolCalls });
  return content;
}

async function streamChat(upstream: Upstream, request: ModelRequest): Promise<AsyncIterable<StreamPiece>> {
  const res = await postCompletion(upstream, request, true);
  if (!res.body) throw new UpstreamError("the upstream stream has no body");
  return completionStream(res.body, request);
}

/** The reply's pieces from the upstream's chunks, its outcome reported at the end. */
async function* completionStream(body: ByteStream, request: ModelRequest): AsyncGenerator<StreamPiece> {
  let finished = false;
  let finishReason: string | undefined;
  let usage: unknown;
  const calls = toolCallCollector();
  const report = () => request.onOutcome?.({ finishReason: finishReasonFrom(finishReason), usage: usageFrom(usage), toolCalls: calls.calls() });
  try {
    for await (const event of readServerSentEvents(body)) {
      if (event.data === "[DONE]") return report();
      const chunk = parseChunk(event.data);
      // Usage may come in a last chunk with no choices (stream_options.include_usage).
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (choice?.delta?.content) yield choice.delta.content;
      for (const delta of toolCallDeltas(choice?.delta?.tool_calls)) {
        calls.add(delta);
        yield { toolCall: delta };
      }
      if (choice?.finish_reason) {
        finished = true;
        finishReason = choice.finish_reason;
      }
    }
  } catch (err) {
    throw asUpstreamFailure(err, request.signal);
  }
  // Some servers end without [DONE] after the final chunk; without either, it broke off.
  if (!finished) throw asUpstreamFailure(new UpstreamError("the upstream stream ended before the reply was complete"), request.signal);
  report();
}

/** A stream's chunk; one that is not JSON, or that reports an error, is an UpstreamError. */
function parseChunk(data: string): CompletionReply {
  let chunk: CompletionReply;
  try {
    chunk = JSON.parse(data) as CompletionReply;
  } catch {
    throw new UpstreamError(`the upstream sent an event that is not JSON: ${data.slice(0, 100)}`);
  }
  if (chunk.error !== undefined) {
    throw new UpstreamError(`the upstream reported an error mid-stream: ${JSON.stringify(chunk.error).slice(0, 300)}`);
  }
  return chunk;
}

/** A chunk's tool-call pieces, each with its call's index (its position when the server gives none). */
function toolCallDeltas(calls: WireToolCall[] | null | undefined): ToolCallDelta[] {
  return (calls ?? []).map((call, position) => ({
    index: typeof call.index === "number" ? call.index : position,
    ...(call.id ? { id: call.id } : {}),
    ...(call.function?.name ? { name: call.function.name } : {}),
    ...(call.function?.arguments ? { arguments: call.function.arguments } : {}),
  }));
}
