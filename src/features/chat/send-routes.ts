import { z } from "@hono/zod-openapi";
import type { SSEMessage } from "hono/streaming";
import { errorBody, type HttpError } from "../../platform/http/error-mapper";
import { createRouter } from "../../platform/http/router";
import { sendChat, type ChatReply } from "./send";
import { CreditsSchema } from "../account/credits-routes";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";
import { replyWith, type WireFormat } from "./exchange-wire";
import { jsonData, registerEventSchema, schemaRef, sseEvent } from "../../platform/http/event-stream";

const MAX_MESSAGE_CHARS = 32_000;

const ChatSendSchema = z
  .object({
    message: z
      .string()
      // A message with nothing but whitespace asks the model nothing: refused, and the
      // document says so (the pattern).
      .regex(/\S/, "must not be empty or blank")
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

// The streamed reply's events (see event-stream.ts): pieces of the reply, then its end or a failure.
const ChatStreamDeltaSchema = z.object({ delta: z.string().openapi({ example: "Water it" }) }).openapi("ChatStreamDelta");
const ChatStreamDoneSchema = z
  .object({ model: ChatReplySchema.shape.model, contextId: ChatReplySchema.shape.contextId, credits: CreditsSchema })
  .openapi("ChatStreamDone");
const ChatStreamEvent = {
  description: "One event of a streamed reply (`stream: true`)",
  oneOf: [
    sseEvent(undefined, jsonData(schemaRef("ChatStreamDelta")), "A piece of the reply, in order: `data: {\"delta\":\"…\"}`"),
    sseEvent("done", jsonData(schemaRef("ChatStreamDone")), "The last event: the reply without `response` (its model, context and credits)"),
    sseEvent("error", jsonData(schemaRef("Error")), "The last event of a stream that failed after it began: an Error body; nothing is charged"),
  ],
};

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
        "text/event-stream": { schema: schemaRef("ChatStreamEvent") },
      },
    },
    ...errorResponses(400, 401, 402, 404, 409, 413, 415, 422, 502, 503, 504),
  },
});

const errorEvent = (error: HttpError): SSEMessage => ({ event: "error", data: JSON.stringify(errorBody(error)) });

/** /chat/send's wire format: the reply as JSON, or `data: {delta}` events and `event: done` with the reply without `response`. */
const chatWire: WireFormat<ChatReply> = {
  body: (reply) => reply,
  started: () => [],
  delta: (delta) => ({ data: JSON.stringify({ delta }) }),
  done: ({ response: _response, ...rest }) => [{ event: "done", data: JSON.stringify(rest) }],
  error: errorEvent,
};

const chatRouter = createRouter();
chatRouter.openAPIRegistry.register("ChatStreamDelta", ChatStreamDeltaSchema);
chatRouter.openAPIRegistry.register("ChatStreamDone", ChatStreamDoneSchema);
registerEventSchema(chatRouter, "ChatStreamEvent", ChatStreamEvent);

export const chatRoutes = chatRouter.openapi(send, async (c) => {
  const { message, model, contextId, stream } = c.req.valid("json");
  const turn = await sendChat(c.get("deps"), {
    principal: c.get("principal"),
    message,
    modelId: model,
    contextId,
    idempotencyKey: c.req.valid("header")["idempotency-key"],
    requestId: c.get("requestId"),
  });
  return replyWith(c, turn, stream === true, chatWire);
});
