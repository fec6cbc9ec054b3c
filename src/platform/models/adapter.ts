import type { ByteStream } from "./sse";

/** A piece of a message's content: text, or an image by URL (an https: or a data: URL). */
export type ContentPart = { type: "text"; text: string } | { type: "image"; url: string; detail?: "auto" | "low" | "high" };

/** A call the model made to one of the request's tools (OpenAI's function call). */
export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text. */
  arguments: string;
}

/**
 * One turn of a conversation, as every provider protocol understands it. Text is a string;
 * images and tools appear only where the caller sent them (the OpenAI-compatible surface).
 */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | ContentPart[];
  /** An assistant turn's calls to tools. */
  toolCalls?: ToolCall[];
  /** A tool turn: the call whose result it carries. */
  toolCallId?: string;
}

/** The text of a message's content: its text parts, joined by newlines. */
export function textOf(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  return content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
}

/** A tool the model may call: a function with a JSON Schema for its arguments. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

/** Whether and which tool the model must call. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** The shape the reply must take: free text, any JSON object, or JSON matching a schema. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };

/** What the model may do besides writing text: call tools, answer in JSON. */
export interface ModelTooling {
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  /** false: at most one tool call per reply. */
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
}

/**
 * Sampling settings, on OpenAI's scales (temperature 0..2, top_p 0..1). Each adapter passes
 * on what its provider takes; anything left unset is the provider's default.
 */
export interface Sampling {
  temperature?: number;
  topP?: number;
  /** The longest reply, in tokens. */
  maxTokens?: number;
  /** Sequences that end the reply where they would appear (not included). */
  stop?: string[];
}

/** How a reply ended and what it cost, as far as the provider says. */
export interface ModelOutcome {
  /** `length`: cut off by maxTokens; `content_filter`: the provider refused or withheld; `tool_calls`: it called tools. */
  finishReason?: "stop" | "length" | "content_filter" | "tool_calls";
  usage?: { promptTokens: number; completionTokens: number };
  /** The reply's tool calls, whole (a stream also yields them in pieces as they come). */
  toolCalls?: ToolCall[];
}

export interface ModelRequest extends ModelTooling {
  messages: ChatMessage[];
  /** Aborts the upstream call: the client went away, or the timeout fired. */
  signal: AbortSignal;
  sampling?: Sampling;
  /** Told once how the reply ended, before `complete` resolves or the stream finishes. */
  onOutcome?(outcome: ModelOutcome): void;
}

/** A piece of a streamed tool call, in OpenAI's shape: the first piece of a call carries its id and name. */
export interface ToolCallDelta {
  /** Which call of the reply (0, 1, …). */
  index: number;
  id?: string;
  name?: string;
  /** More of the arguments' JSON text. */
  arguments?: string;
}

/** What a stream yields: text, or a piece of a tool call. */
export type StreamPiece = string | { toolCall: ToolCallDelta };

/**
 * One provider protocol bound to one upstream model. Both calls reject with an
 * UpstreamError when the provider fails, or with the signal's reason when it aborts.
 */
export interface ModelAdapter {
  /** The whole reply's text (its tool calls, if any, go to onOutcome). */
  complete(request: ModelRequest): Promise<string>;
  /**
   * Resolves once the upstream has accepted the request (so an immediate failure is
   * still an ordinary error reply), then yields the reply in pieces.
   */
  stream(request: ModelRequest): Promise<AsyncIterable<StreamPiece>>;
}

/** Collects a stream's tool-call pieces into whole calls, in order of index. */
export function toolCallCollector() {
  const calls: ToolCall[] = [];
  return {
    add(delta: ToolCallDelta) {
      const call = (calls[delta.index] ??= { id: "", name: "", arguments: "" });
      if (delta.id) call.id = delta.id;
      if (delta.name) call.name += delta.name;
      if (delta.arguments) call.arguments += delta.arguments;
    },
    /** The calls so far, or undefined when there were none. */
    calls: () => (calls.length > 0 ? calls.filter(Boolean) : undefined),
  };
}

/**
 * The provider failed. `message` is safe to log but never shown to clients: it may quote
 * the provider's reply. `credentialsRejected` marks a 401/403: the operator's key is wrong.
 */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    message: string,
    readonly status?: number,
    readonly credentialsRejected = false,
  ) {
    super(message);
  }
}

/** An upstream reply as the adapters read it; a fetch Response is one. */
export interface UpstreamReply {
  status: number;
  ok: boolean;
  json(): Promise<unknown>;
  text(): Promise<string>;
  body: ByteStream | null;
}

/**
 * How adapters call their upstream: the global fetch by default (Workers), a kept-alive
 * connection pool on Node (src/platform/node/upstream-pool.ts), handed in through the runtime options.
 */
export type UpstreamFetch = (
  url: string,
  init: { method: "GET" | "POST"; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<UpstreamReply>;

export const globalFetch: UpstreamFetch = (url, init) => fetch(url, init);

/** The JSON body of an upstream reply; a broken or aborted body is an upstream failure. */
export async function upstreamJson<T>(res: UpstreamReply, signal: AbortSignal): Promise<T> {
  try {
    return (await res.json()) as T;
  } catch (err) {
    throw asUpstreamFailure(err, signal);
  }
}

/** An UpstreamError for a non-2xx reply, quoting (a little of) its body for the log. */
export async function upstreamStatusError(res: UpstreamReply, secret?: string): Promise<UpstreamError> {
  let body = "";
  try {
    body = (await res.text()).slice(0, 300);
  } catch {
    // The body is only for the log.
  }
  if (secret) body = body.split(secret).join("[redacted]");
  return new UpstreamError(
    `upstream answered ${res.status}${body ? `: ${body.replace(/\s+/g, " ")}` : ""}`,
    res.status,
    res.status === 401 || res.status === 403,
  );
}

/** Calls the upstream, turning a network failure (not an abort) into an UpstreamError. */
export async function fetchUpstream(fetcher: UpstreamFetch, ...[url, init]: Parameters<UpstreamFetch>): Promise<UpstreamReply> {
  try {
    return await fetcher(url, init);
  } catch (err) {
    if (init.signal.aborted) throw init.signal.reason;
    throw new UpstreamError(`could not reach the upstream: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Rethrows an abort as the signal's reason, and anything else as an UpstreamError. */
export function asUpstreamFailure(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  if (err instanceof UpstreamError) return err;
  return new UpstreamError(`the upstream reply broke off: ${err instanceof Error ? err.message : String(err)}`);
}

/** OpenAI's `finish_reason` (or a provider's near equivalent) as a ModelOutcome's. */
export function finishReasonFrom(reason: string | null | undefined): ModelOutcome["finishReason"] {
  if (!reason) return undefined;
  if (reason === "length" || reason === "max_tokens") return "length";
  if (reason === "content_filter" || reason === "refusal") return "content_filter";
  if (reason === "tool_calls" || reason === "tool_use" || reason === "function_call") return "tool_calls";
  return "stop";
}

/** Token counts from an OpenAI-style `usage` object, when it has both numbers. */
export function usageFrom(usage: unknown): ModelOutcome["usage"] {
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (typeof u?.prompt_tokens !== "number" || typeof u.completion_tokens !== "number") return undefined;
  return { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens };
}
