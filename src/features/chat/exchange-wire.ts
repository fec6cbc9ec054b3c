import type { Context } from "hono";
import { streamSSE, type SSEMessage } from "hono/streaming";
import type { AppEnv } from "../../platform/deps";
import { creditHeaders, toHttpError, type HttpError } from "../../platform/http/error-mapper";
import type { Turn } from "./exchange";
import type { ToolCallDelta } from "../../platform/models/adapter";
import { waitUntil } from "../../platform/wait-until";

// ---------------------------------------------------------------------------------------
// A chat exchange on the wire, for /chat/send and /v1/chat/completions alike: the service
// owns the exchange (debit, model, storage, refund); a route only picks the wire format.
// ---------------------------------------------------------------------------------------

/** How one surface writes a reply: whole as JSON, or as server-sent events. */
export interface WireFormat<R> {
  /** The JSON body of a whole reply. */
  body(reply: R): unknown;
  /** Events before the first piece of a stream, which `model` answers. */
  started(model?: string): SSEMessage[];
  delta(text: string): SSEMessage;
  /** A piece of a tool call (only /v1 relays tools). */
  toolCall?(call: ToolCallDelta): SSEMessage;
  /** Events that end a stream, once the exchange is stored. */
  done(reply: R): SSEMessage[];
  /** The event that ends a stream that failed after it began. */
  error(error: HttpError): SSEMessage;
}

/**
 * Answers with a turn's reply (its `X-Model` header naming the model that answered): JSON, or a stream that starts once the model has accepted
 * the request (so a failure before that is an ordinary error reply). A stream's failure
 * after that is its last event. A client that leaves mid-stream cancels the exchange,
 * which releases its charge; a model that had finished is stored and charged.
 */
export async function replyWith<R>(c: Context<AppEnv>, turn: Turn<R>, stream: boolean, wire: WireFormat<R>): Promise<Response> {
  if (turn.replayed) c.header("Idempotent-Replayed", "true");
  // Only on a reply that goes ahead: a failure before it is refunded, and an error reply
  // carrying the charged count would tell the client a credit was spent.
  const chargedHeaders = (model?: string) => {
    const credits = (model && turn.creditsAfter?.(model)) || turn.credits;
    for (const [name, value] of Object.entries(creditHeaders(credits))) c.header(name, value);
  };
  // The client leaving shows as the request's signal (@hono/node-server aborts it when the
  // connection closes before the reply is finished) or as the response being cancelled.
  const left = c.req.raw.signal;
  if (!stream) {
    for await (const event of turn.events(left, false)) {
      if (event.type === "done") {
        chargedHeaders(event.model);
        if (event.model) c.header("X-Model", event.model);
        return c.json(wire.body(event.reply) as object, 200);
      }
    }
    throw new Error("the exchange ended without its reply");
  }

  const gone = new AbortController();
  if (left.aborted) gone.abort(left.reason);
  else left.addEventListener("abort", () => gone.abort(left.reason), { once: true });
  const events = turn.events(gone.signal, true);
  const first = await events.next();
  // The model that answers is known once the stream starts (a fallback, if the one asked for failed).
  const answering = !first.done && first.value.type === "started" ? first.value.model : undefined;
  chargedHeaders(answering);
  if (answering) c.header("X-Model", answering);
  const { log } = c.get("deps");
  const requestId = c.get("requestId");

  const relay = async (sse: { writeSSE(m: SSEMessage): Promise<void>; aborted: boolean }) => {
    try {
      for (let next = first; !next.done; next = await events.next()) {
        const event = next.value;
        const messages =
          event.type === "started"
            ? wire.started(event.model)
            : event.type === "delta"
              ? [wire.delta(event.text)]
              : event.type === "tool-call"
                ? (wire.toolCall ? [wire.toolCall(event.call)] : [])
                : wire.done(event.reply);
        for (const message of messages) await sse.writeSSE(message);
      }
    } catch (err) {
      const error = toHttpError(err, requestId, (fault) => log.error("chat stream failed", { requestId, err: fault }));
      if (!sse.aborted) await sse.writeSSE(wire.error(error));
    } finally {
      await events.return(undefined); // an exchange left unread is released
    }
  };

  return streamSSE(c, async (sse) => {
    sse.onAbort(() => gone.abort(new DOMException("the client went away", "AbortError")));
    const work = relay(sse);
    waitUntil(c, work);
    await work;
  });
}
