import type { ByteStream } from "./sse";

/** One turn of a conversation, as every provider protocol understands it. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
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
  /** `length`: cut off by maxTokens; `content_filter`: the provider refused or withheld. */
  finishReason?: "stop" | "length" | "content_filter";
  usage?: { promptTokens: number; completionTokens: number };
}

export interface ModelRequest {
  messages: ChatMessage[];
  /** Aborts the upstream call: the client went away, or the timeout fired. */
  signal: AbortSignal;
  sampling?: Sampling;
  /** Told once how the reply ended, before `complete` resolves or the stream finishes. */
  onOutcome?(outcome: ModelOutcome): void;
}

/**
 * One provider protocol bound to one upstream model. Both calls reject with an
 * UpstreamError when the provider fails, or with the signal's reason when it aborts.
 */
export interface ModelAdapter {
  /** The whole reply. */
  complete(request: ModelRequest): Promise<string>;
  /**
   * Resolves once the upstream has accepted the request (so an immediate failure is
   * still an ordinary error reply), then yields the reply's text in pieces.
   */
  stream(request: ModelRequest): Promise<AsyncIterable<string>>;
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
  init: { method: "POST"; headers: Record<string, string>; body: string; signal: AbortSignal },
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
  return "stop";
}

/** Token counts from an OpenAI-style `usage` object, when it has both numbers. */
export function usageFrom(usage: unknown): ModelOutcome["usage"] {
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (typeof u?.prompt_tokens !== "number" || typeof u.completion_tokens !== "number") return undefined;
  return { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens };
}
