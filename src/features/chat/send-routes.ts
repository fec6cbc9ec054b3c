import { z } from "@hono/zod-openapi";
import type { SSEMessage } from "hono/streaming";
import { errorBody, type HttpError } from "../../platform/http/error-mapper";
import { createRouter } from "../../platform/http/router";
import { regenerateReply, sendChat, type ChatReply } from "./send";
import { CreditsSchema } from "../account/credits-routes";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";
import { replyWith, type WireFormat } from "./exchange-wire";
import { jsonData, registerEventSchema, schemaRef, sseEvent } from "../../platform/http/event-stream";
import { Id } from "../../platform/http/service-id";
import { text } from "../../platform/http/text";
import { waitUntil } from "../../platform/wait-until";
import { MAX_INSTRUCTIONS } from "../contexts/contexts";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/deps";

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
    parentId: Id.nullable()
      .optional()
      .openapi({
        description:
          "With `contextId`: the reply this message follows, making a new branch (to send an edited message again, the " +
          "`parentId` of the message it replaces; null for a first message). Default: the end of the active branch",
      }),
    instructions: text(0, MAX_INSTRUCTIONS, { message: `must be at most ${MAX_INSTRUCTIONS} characters` })
      .nullable()
      .optional()
      .openapi({ description: "Without `contextId`: the new context's instructions (a system prompt, e.g. a preset's)" }),
    stream: z.boolean().optional().openapi({ description: "Reply as text/event-stream" }),
  })
  .refine((b) => b.parentId === undefined || b.contextId !== undefined, { message: "needs contextId: a message follows a reply of a context", path: ["parentId"] })
  .refine((b) => b.instructions === undefined || b.instructions === null || b.contextId === undefined, {
    message: "only for a new context (without contextId); change a context's instructions with PATCH /contexts/{id}",
    path: ["instructions"],
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
  "X-Model": z.string().optional().openapi({ example: "svc-70b", description: "The model that answered: the one asked for, or a fallback" }),
});

const ChatReplySchema = z
  .object({
    response: z.string(),
    model: z.string().openapi({ example: "svc-70b" }),
    contextId: z.string(),
    messageId: z.string().openapi({ description: "The stored reply: the end of the context's active branch", example: "msg_Yv3Q0k8mN2pR5sT7uW9xZA" }),
    parentId: z.string().openapi({ description: "The user message it answers", example: "msg_Yv3Q0k8mN2pR5sT7uW9xZB" }),
    credits: CreditsSchema,
  })
  .openapi("ChatReply");

// The streamed reply's events (see event-stream.ts): pieces of the reply, then its end or a failure.
const ChatStreamDeltaSchema = z.object({ delta: z.string().openapi({ example: "Water it" }) }).openapi("ChatStreamDelta");
const ChatStreamDoneSchema = ChatReplySchema.omit({ response: true }).openapi("ChatStreamDone");
const ChatStreamEvent = {
  description: "One event of a streamed reply (`stream: true`)",
  oneOf: [
    sseEvent(undefined, jsonData(schemaRef("ChatStreamDelta")), "A piece of the reply, in order: `data: {\"delta\":\"…\"}`"),
    sseEvent("done", jsonData(schemaRef("ChatStreamDone")), "The last event: the reply without `response` (its model, context, message ids and credits)"),
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

const RegenerateSchema = z
  .object({
    model: ChatSendSchema.shape.model,
    stream: z.boolean().optional().openapi({ description: "Reply as text/event-stream" }),
  })
  .openapi("Regenerate");

const regenerate = authenticatedRoute({
  method: "post",
  path: "/contexts/{id}/messages/{messageId}/regenerate",
  tags: ["chat"],
  summary: "Answer a reply's user message again: a new version of the reply, which becomes the active branch",
  description:
    "Costs the model's credit price, like POST /chat/send, and answers like it (JSON, or a stream with `stream: true`). " +
    "The model receives the context's instructions and the branch up to the user message; the new reply is a sibling of " +
    "`messageId` (GET /contexts/{id} lists it in `siblingIds`).",
  request: {
    params: z.object({
      id: Id.openapi({ param: { name: "id", in: "path" }, example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }),
      messageId: Id.openapi({ param: { name: "messageId", in: "path" }, example: "msg_Yv3Q0k8mN2pR5sT7uW9xZA" }),
    }),
    headers: IdempotencyHeaders,
    body: { required: false, content: { "application/json": { schema: RegenerateSchema } } },
  },
  responses: {
    200: {
      description: "The new reply (JSON), or its stream (text/event-stream)",
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

/** Keeps work that outlives the reply: Workers' waitUntil, or the Node server's own keeping. */
const background = (c: Context<AppEnv>) => (work: Promise<unknown>) => void (waitUntil(c, work) || c.get("deps").background?.(work));

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

export const chatRoutes = chatRouter
  .openapi(send, async (c) => {
    const { message, model, contextId, parentId, instructions, stream } = c.req.valid("json");
    const turn = await sendChat(c.get("deps"), {
      principal: c.get("principal"),
      message,
      modelId: model,
      contextId,
      parentId,
      instructions: instructions ?? undefined,
      idempotencyKey: c.req.valid("header")["idempotency-key"],
      requestId: c.get("requestId"),
      background: background(c),
    });
    return replyWith(c, turn, stream === true, chatWire);
  })
  .openapi(regenerate, async (c) => {
    const { id, messageId } = c.req.valid("param");
    const { model, stream } = c.req.valid("json");
    const turn = await regenerateReply(c.get("deps"), {
      principal: c.get("principal"),
      contextId: id,
      messageId,
      modelId: model,
      idempotencyKey: c.req.valid("header")["idempotency-key"],
      requestId: c.get("requestId"),
    });
    return replyWith(c, turn, stream === true, chatWire);
  });
