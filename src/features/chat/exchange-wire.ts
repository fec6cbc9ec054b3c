import type { Context } from "hono";
import { streamSSE, type SSEMessage } from "hono/streaming";
import type { AppEnv } from "../../platform/deps";
import { creditHeaders, toHttpError, type HttpError } from "../../platform/http/error-mapper";
import { waitUntil } from "../../platform/wait-until";

// ---------------------------------------------------------------------------------------
// What the chat routes share at the wire (POST /chat/send, regenerate and
// /v1/chat/completions): the client leaving, the headers of a charged reply, reading an
// exchange's events to its end, and sending server-sent events. Each route maps the
// exchange's events to its own format; nothing here calls back into a route.
// ---------------------------------------------------------------------------------------

/**
 * A signal that aborts when the client goes away: the request's own (@hono/node-server
 * aborts it when the connection closes before the reply is finished), or the stream's
 * (sseReply aborts it).
 */
export function clientGone(c: Context<AppEnv>): AbortController {
  const gone = new AbortController();
  const left = c.req.raw.signal;
  if (left.aborted) gone.abort(left.reason);
  else left.addEventListener("abort", () => gone.abort(left.reason), { once: true });
  return gone;
}

/**
 * The headers of a reply that goes ahead: the credits once charged (only then: an error
 * reply carrying the charged count would tell the client a credit was spent), and the
 * model that answers (the one asked for, or a fallback).
 */
export function setChargedHeaders(c: Context<AppEnv>, credits: { remaining: number; resetAt: string }, model?: string): void {
  for (const [name, value] of Object.entries(creditHeaders(credits))) c.header(name, value);
  if (model) c.header("X-Model", model);
}

/** Reads an exchange's events to its `done` event, and returns it. */
export async function untilDone<E extends { type: string }>(events: AsyncIterable<E>): Promise<Extract<E, { type: "done" }>> {
  for await (const event of events) if (event.type === "done") return event as Extract<E, { type: "done" }>;
  throw new Error("the exchange ended without its reply");
}

/** An error met after a stream began, as its last event shows it (its fault logged). */
export function streamError(c: Context<AppEnv>, err: unknown): HttpError {
  const requestId = c.get("requestId");
  return toHttpError(err, requestId, (fault) => c.get("deps").log.error("chat stream failed", { requestId, err: fault }));
}

/**
 * Answers with server-sent events, written as `messages` yields them. A client that goes
 * away aborts `gone`, and the messages are let go (an exchange left unread is released).
 * On Workers the relay is kept alive with waitUntil. Counted in the metrics' open streams while it runs.
 */
export function sseReply(c: Context<AppEnv>, gone: AbortController, messages: AsyncGenerator<SSEMessage, void, undefined>): Response {
  const { metrics } = c.get("deps");
  return streamSSE(c, async (sse) => {
    sse.onAbort(() => gone.abort(new DOMException("the client went away", "AbortError")));
    metrics.streams(1);
    const relay = (async () => {
      try {
        for await (const message of messages) {
          if (sse.aborted) break;
          await sse.writeSSE(message);
        }
      } finally {
        metrics.streams(-1);
        await messages.return(undefined);
      }
    })();
    waitUntil(c, relay);
    await relay;
  });
}
