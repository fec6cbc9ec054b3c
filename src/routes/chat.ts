import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import type { AppEnv } from "../deps";
import { ApiError, type ErrorBody } from "../errors";
import { createRouter } from "../router";
import { creditHeaders, startChat, type ChatReply } from "../services/chat";
import { CreditsSchema } from "./credits";
import { authenticatedRoute } from "./authenticated-route";
import { errorResponses } from "./errors";

const MAX_MESSAGE_CHARS = 32_000;

const ChatSendSchema = z
  .object({
    message: z
      .string()
      .refine((m) => m.trim() !== "", "must not be empty or blank")
      // Characters, not UTF-16 units: an emoji counts once.
      .refine((m) => [...m].length <= MAX_MESSAGE_CHARS, `must be at most ${MAX_MESSAGE_CHARS} characters`)
      .openapi({ example: "How often should I water a monstera?", minLength: 1, maxLength: MAX_MESSAGE_CHARS }),
    model: z.string().min(1).max(100).optional().openapi({ example: "svc-70b", description: "Default: the caller's default model, else svc-70b" }),
    contextId: z.string().min(1).max(100).optional().openapi({ description: "Continue this context; omit to start a new one" }),
    stream: z.boolean().optional().openapi({ description: "Reply as text/event-stream" }),
  })
  .openapi("ChatSend");

/** The optional Idempotency-Key of a charged request (here and on /v1). */
export const IdempotencyHeaders = z.object({
  "idempotency-key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "must be 1..255 visible ASCII characters")
    .optional()
    .openapi({ description: "A retry with the same key within 24 h returns the first reply, uncharged" }),
});

/** The credit headers of a charged reply (here and on /v1). */
export const CreditReplyHeaders = z.object({
  "X-Credits-Remaining": z.string().openapi({ example: "499" }),
  "X-Credits-Reset": z.string().openapi({ example: "2026-11-23T00:00:00.000Z" }),
});

const ChatReplySchema = z
  .object({
    response: z.string(),
    model: z.string().openapi({ example: "svc-70b" }),
    contextId: z.string(),
    credits: CreditsSchema,
  })
  .openapi("ChatReply");

const send = authenticatedRoute({
  method: "post",
  path: "/chat/send",
  tags: ["chat"],
  summary: "Send a message to a model, in a new or an existing context",
  description:
    "Costs the model's credit price, charged before the model is called and refunded if it fails. " +
    "With `stream: true` the reply is `text/event-stream`: `data: {\"delta\"}` events, then `event: done` " +
    "with the reply without `response` (or `event: error` with an Error body, nothing charged).",
  request: {
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: ChatSendSchema } } },
  },
  responses: {
    200: {
      description: "The reply (JSON), or its stream (text/event-stream)",
      headers: CreditReplyHeaders,
      content: {
        "application/json": { schema: ChatReplySchema },
        "text/event-stream": { schema: z.string().openapi({ example: 'data: {"delta":"Water it"}\n\nevent: done\ndata: {...}\n\n' }) },
      },
    },
    ...errorResponses(400, 401, 402, 404, 409, 413, 415, 422, 502, 503, 504),
  },
});

/** Lets work outlive the reply (Workers' waitUntil); on Node the promise runs on by itself. */
function waitUntil(c: Context<AppEnv>, promise: Promise<unknown>) {
  try {
    c.executionCtx.waitUntil(promise);
  } catch {
    // No ExecutionContext outside Workers.
  }
}

const errorEvent = (error: ApiError): { event: string; data: string } => ({
  event: "error",
  data: JSON.stringify({ error: error.status, message: error.message } satisfies ErrorBody),
});

const doneEvent = ({ response: _response, ...rest }: ChatReply) => ({ event: "done", data: JSON.stringify(rest) });

export const chatRoutes = createRouter().openapi(send, async (c) => {
  const { message, model, contextId, stream } = c.req.valid("json");
  const idempotencyKey = c.req.valid("header")["idempotency-key"];
  const deps = c.var.deps;
  const start = await startChat(deps, {
    principal: c.var.principal,
    message,
    modelId: model,
    contextId,
    idempotencyKey,
    requestId: c.var.requestId,
  });

  if (start.kind === "replay") {
    const reply = start.body;
    c.header("Idempotent-Replayed", "true");
    for (const [name, value] of Object.entries(creditHeaders(reply.credits))) c.header(name, value);
    if (!stream) return c.json(reply, 200);
    return streamSSE(c, async (sse) => {
      await sse.writeSSE({ data: JSON.stringify({ delta: reply.response }) });
      await sse.writeSSE(doneEvent(reply));
    });
  }

  const { exchange } = start;
  if (!stream) {
    const response = await exchange.complete(start.prompt, c.req.raw.signal);
    const reply = await start.finish(response);
    return c.json(reply, 200, creditHeaders(reply.credits));
  }

  // The client leaving shows as the request's signal (Node) or the response being cancelled.
  const gone = new AbortController();
  const signal = AbortSignal.any([c.req.raw.signal, gone.signal]);
  const deltas = await exchange.stream(start.prompt, signal);
  for (const [name, value] of Object.entries(creditHeaders(exchange.credits))) c.header(name, value);

  const relay = async (sse: SSEStreamingApi) => {
    let text = "";
    try {
      for await (const delta of deltas) {
        text += delta;
        await sse.writeSSE({ data: JSON.stringify({ delta }) });
      }
      // The upstream finished: the exchange is complete and is stored, whether or not the
      // client is still there to read the last event.
      await sse.writeSSE(doneEvent(await start.finish(text)));
    } catch (err) {
      await exchange.abandon("the stream failed");
      const error = err instanceof ApiError ? err : new ApiError(500, `internal error; quote request id ${c.var.requestId} when reporting it`);
      if (!(err instanceof ApiError)) deps.log.error("chat stream failed", { requestId: c.var.requestId, err });
      if (!sse.aborted) await sse.writeSSE(errorEvent(error));
    }
  };

  return streamSSE(c, async (sse) => {
    sse.onAbort(() => gone.abort(new DOMException("the client went away", "AbortError")));
    const work = relay(sse);
    waitUntil(c, work);
    await work;
  });
});
