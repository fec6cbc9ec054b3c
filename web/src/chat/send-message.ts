import { ApiError, api, authedFetch, must, noticeResponse, type Credits } from "../api/client";
import type { paths } from "../api/schema";

type SendBody = paths["/chat/send"]["post"]["requestBody"]["content"]["application/json"];
type RegenerateBody = NonNullable<paths["/contexts/{id}/messages/{messageId}/regenerate"]["post"]["requestBody"]>["content"]["application/json"];

export interface DoneEvent {
  model: string;
  contextId: string;
  /** The stored reply, and the message it answers. */
  messageId: string;
  parentId: string;
  credits: Credits;
}

/** The first event of a reply sent in the background: the question is stored and its reply is running. */
export interface StartedEvent {
  contextId: string;
  /** The question. */
  messageId: string;
  replyId: string;
}

type StreamOptions = {
  idempotencyKey: string;
  signal: AbortSignal;
  onDelta: (text: string) => void;
  onStarted?: (started: StartedEvent) => void;
};

// The web client sends every exchange with `background: true`: a closed connection (another
// chat opened, the tab closed) no longer cancels the reply; it runs to its end on the server,
// and the page follows it again (followReply) when the conversation is opened. Stop is a
// request of its own (stopReply).

/** Sends a message (POST /chat/send) and streams the reply; see streamExchange. */
export function sendMessage(body: Omit<SendBody, "stream" | "background">, options: StreamOptions): Promise<DoneEvent> {
  return streamExchange("/chat/send", { body: { ...body, stream: true, background: true } satisfies SendBody }, options);
}

/** Asks for another reply to the message a reply answers, and streams it; see streamExchange. */
export function regenerateReply(contextId: string, messageId: string, body: Omit<RegenerateBody, "stream" | "background">, options: StreamOptions): Promise<DoneEvent> {
  const path = `/contexts/${encodeURIComponent(contextId)}/messages/${encodeURIComponent(messageId)}/regenerate`;
  return streamExchange(path, { body: { ...body, stream: true, background: true } satisfies RegenerateBody }, options);
}

/**
 * Follows a reply still being written (GET …/stream), from `offset` characters on: its deltas,
 * then done. A reply that has finished meanwhile answers the rest of its stored text at once.
 */
export function followReply(contextId: string, replyId: string, offset: number, options: Omit<StreamOptions, "idempotencyKey" | "onStarted">): Promise<DoneEvent> {
  const path = `/contexts/${encodeURIComponent(contextId)}/messages/${encodeURIComponent(replyId)}/stream`;
  return streamExchange(path, { lastEventId: offset > 0 ? String(offset) : undefined }, options);
}

/** Stops a running reply: the question and what the reply holds so far are kept (POST …/stop). */
export async function stopReply(contextId: string, replyId: string): Promise<void> {
  await must(api.POST("/contexts/{id}/messages/{replyId}/stop", { params: { path: { id: contextId, replyId } } }));
}

/** A reply's thumbs up or down (null: neither). */
export async function rateReply(contextId: string, messageId: string, rating: "up" | "down" | null): Promise<void> {
  await must(api.PUT("/contexts/{id}/messages/{messageId}/rating", { params: { path: { id: contextId, messageId } }, body: { rating } }));
}

/**
 * Reads a reply's server-sent events with fetch and a ReadableStream (EventSource cannot POST
 * nor send a header): POST with `body` as JSON, or GET (without one) from `lastEventId`. `onDelta` gets
 * each piece of text as it arrives. Rejects with ApiError for an error reply or an `error`
 * event, and with the abort reason when `signal` aborts (the reply goes on on the server).
 */
async function streamExchange(
  path: string,
  request: { body?: object; lastEventId?: string },
  options: Omit<StreamOptions, "idempotencyKey"> & { idempotencyKey?: string },
): Promise<DoneEvent> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (request.body) headers["Content-Type"] = "application/json";
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  if (request.lastEventId) headers["Last-Event-ID"] = request.lastEventId;
  const init = { method: request.body ? "POST" : "GET", headers, body: request.body ? JSON.stringify(request.body) : undefined, signal: options.signal };
  const response = await authedFetch(new Request(path, init));
  noticeResponse(response);
  if (!response.ok || !response.body) {
    const error = (await response.json().catch(() => null)) as { message?: string } | null;
    throw new ApiError(response.status, error?.message ?? `the server answered ${response.status}`, response.headers);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const { event, data } = parseEvent(block);
      if (data === null) continue;
      const payload = JSON.parse(data) as Record<string, unknown>;
      if (event === "done") return payload as unknown as DoneEvent;
      if (event === "error") throw new ApiError(Number(payload.error) || 502, String(payload.message ?? "the model failed"));
      if (event === "started") options.onStarted?.(payload as unknown as StartedEvent);
      else if (typeof payload.delta === "string") options.onDelta(payload.delta);
    }
  }
  // The connection ended without a word from the server: status 0, as a network failure.
  throw new ApiError(0, "the connection broke off before the reply finished");
}

function parseEvent(block: string): { event: string; data: string | null } {
  let event = "message";
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return { event, data: data.length > 0 ? data.join("\n") : null };
}
