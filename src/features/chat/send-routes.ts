import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { SSEMessage } from "hono/streaming";
import type { Deps } from "../../platform/deps";
import type { AppEnv } from "../../platform/deps";
import { errorBody } from "../../platform/http/error-mapper";
import { createRouter } from "../../platform/http/router";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";
import { jsonData, registerEventSchema, schemaRef, sseEvent } from "../../platform/http/event-stream";
import { Id } from "../../platform/http/service-id";
import { text } from "../../platform/http/text";
import { waitUntil } from "../../platform/wait-until";
import { CreditsSchema } from "../account/credits-schema";
import { MAX_INSTRUCTIONS } from "../contexts/contexts";
import { MAX_MESSAGE_ATTACHMENTS } from "../attachments/attachments";
import { CreditReplyHeaders, IdempotencyHeaders, MessageText } from "./chat-schemas";
import { askedModel, creditsAfter, creditsOf } from "./exchange";
import { clientGone, setChargedHeaders, sseReply, streamError, untilDone } from "./exchange-wire";
import { liveKey, placeReply, runReply, type Finished, type Placed } from "./background";
import { chatExchange, openMessage, type ChatEvent, type ChatReply, type ChatTurn, type ReadyMessage } from "./send";
import type { LiveText } from "../../platform/live-text";
import type { Principal } from "../../platform/auth/principal";
import { titleModelFor, writeTitle } from "./titles";

const ChatSendSchema = z
  .object({
    message: MessageText,
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
    background: z
      .boolean()
      .optional()
      .openapi({
        description:
          "Keep answering if the connection closes: the message and a running reply are stored before the model answers, and the reply is " +
          "stored and charged when it ends (follow it with GET /contexts/{id}/messages/{replyId}/stream; stop it with …/stop). " +
          "A stream then begins with `event: started`. Default: a closed connection cancels the reply and refunds it",
      }),
    attachments: z
      .array(Id)
      .max(MAX_MESSAGE_ATTACHMENTS, { message: `at most ${MAX_MESSAGE_ATTACHMENTS} attachments a message` })
      .optional()
      .openapi({ description: "Ids of uploads (POST /attachments) the message carries, in order; images need a model with images: true" }),
  })
  .refine((b) => b.parentId === undefined || b.contextId !== undefined, { message: "needs contextId: a message follows a reply of a context", path: ["parentId"] })
  .refine((b) => b.instructions === undefined || b.instructions === null || b.contextId === undefined, {
    message: "only for a new context (without contextId); change a context's instructions with PATCH /contexts/{id}",
    path: ["instructions"],
  })
  .openapi("ChatSend");

const ChatReplySchema = z
  .object({
    response: z.string(),
    model: z.string().openapi({ example: "svc-70b" }),
    contextId: z.string(),
    messageId: z.string().openapi({ description: "The stored reply: the end of the context's active branch", example: "msg_Yv3Q0k8mN2pR5sT7uW9xZA" }),
    parentId: z.string().openapi({ description: "The user message it answers", example: "msg_Yv3Q0k8mN2pR5sT7uW9xZB" }),
    credits: CreditsSchema,
    status: z
      .enum(["done", "stopped"])
      .optional()
      .openapi({ description: "With `background`: `stopped` when the reply was stopped (POST …/stop) and keeps what the model had written" }),
    attachmentsCut: z
      .array(z.string())
      .optional()
      .openapi({ description: "Documents (attachment ids) whose text was cut to fit the model's context window; absent when none was" }),
  })
  .openapi("ChatReply");

// The streamed reply's events (see event-stream.ts): pieces of the reply, then its end or a failure.
const ChatStreamDeltaSchema = z.object({ delta: z.string().openapi({ example: "Water it" }) }).openapi("ChatStreamDelta");
const ChatStreamDoneSchema = ChatReplySchema.omit({ response: true }).openapi("ChatStreamDone");
const ChatStreamStartedSchema = z
  .object({
    contextId: z.string(),
    messageId: z.string().openapi({ description: "The person's message, stored" }),
    replyId: z.string().openapi({ description: "The reply being written: follow it with GET /contexts/{id}/messages/{replyId}/stream" }),
  })
  .openapi("ChatStreamStarted");
const ChatStreamEvent = {
  description: "One event of a streamed reply (`stream: true`)",
  oneOf: [
    sseEvent("started", jsonData(schemaRef("ChatStreamStarted")), "With `background`, the first event: where the message and the running reply are stored"),
    sseEvent(undefined, jsonData(schemaRef("ChatStreamDelta")), "A piece of the reply, in order: `data: {\"delta\":\"…\"}`; with `background`, its `id` is the reply's length so far (for Last-Event-ID)"),
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
    background: ChatSendSchema.shape.background,
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

const chatRouter = createRouter();
chatRouter.openAPIRegistry.register("ChatStreamDelta", ChatStreamDeltaSchema);
chatRouter.openAPIRegistry.register("ChatStreamStarted", ChatStreamStartedSchema);
chatRouter.openAPIRegistry.register("ChatStreamDone", ChatStreamDoneSchema);
registerEventSchema(chatRouter, "ChatStreamEvent", ChatStreamEvent);

export const chatRoutes = chatRouter
  .openapi(send, async (c) => {
    const { message, model, contextId, parentId, instructions, stream, background, attachments } = c.req.valid("json");
    const turn: ChatTurn = { kind: "send", message, contextId, parentId, instructions, attachments };
    return answerTurn(c, turn, { modelId: model, key: c.req.valid("header")["idempotency-key"], stream: stream === true, background: background === true });
  })
  .openapi(regenerate, async (c) => {
    const { id, messageId } = c.req.valid("param");
    const { model, stream, background } = c.req.valid("json");
    const turn: ChatTurn = { kind: "regenerate", contextId: id, replyId: messageId };
    return answerTurn(c, turn, { modelId: model, key: c.req.valid("header")["idempotency-key"], stream: stream === true, background: background === true });
  });

/** A message's exchange, from the opening batch to the reply: JSON, or a stream of events. */
async function answerTurn(c: Context<AppEnv>, turn: ChatTurn, asked: { modelId?: string; key?: string; stream: boolean; background: boolean }): Promise<Response> {
  const deps = c.get("deps");
  const { modelId, key, stream } = asked;
  const opened = await openMessage(deps, { principal: c.get("principal"), turn, modelId, idempotency: key ? { key } : undefined, requestId: c.get("requestId") });
  if (opened.kind === "replay") return replay(c, opened.body as ChatReply, stream);
  if (asked.background) return answerInBackground(c, opened, stream);
  const gone = clientGone(c);
  const events = chatExchange(deps, opened, { signal: gone.signal, stream });
  if (!stream) {
    const { reply } = await untilDone(events);
    setChargedHeaders(c, reply.credits, reply.model);
    titleNewContext(c, c.get("principal"), opened, reply);
    return c.json(reply, 200);
  }
  // The stream starts once the model has begun (a failure before is an ordinary error reply).
  const first = await events.next();
  const started = !first.done && first.value.type === "started" ? first.value.model : undefined;
  setChargedHeaders(c, started ? creditsAfter(opened.exchange, started) : creditsOf(opened.exchange), started);
  return sseReply(c, gone, chatEvents(c, first, events, (reply) => titleNewContext(c, c.get("principal"), opened, reply)));
}

/**
 * A reply that runs to its end whatever the connection does (background.ts): placed in its
 * context, run as work kept beyond the request, and followed here, as JSON once it ends or
 * as events. A client that leaves stops following; the reply goes on.
 */
async function answerInBackground(c: Context<AppEnv>, opened: ReadyMessage, stream: boolean): Promise<Response> {
  const deps = c.get("deps");
  const principal = c.get("principal");
  const placed = await placeReply(deps, opened);
  const key = liveKey(placed);
  const live = deps.liveReplies.start<Finished>(key);
  const running = (async () => {
    try {
      await runReply(deps, opened, placed, live);
      const finished = await live.result();
      if (finished.status !== "failed") await titleWork(deps, principal, opened, finished.reply, c.get("requestId"));
    } catch {
      // Logged where it failed; the reply's followers read its error.
    } finally {
      deps.liveReplies.forgetLater(key);
    }
  })();
  keep(c, deps, running);
  setChargedHeaders(c, creditsOf(opened.exchange), askedModel(opened.exchange).id);
  if (!stream) {
    const finished = await live.result();
    if (finished.status === "failed") throw finished.error;
    return c.json({ ...finished.reply, status: finished.status }, 200);
  }
  const gone = clientGone(c);
  return sseReply(c, gone, backgroundEvents(c, placed, live, gone.signal));
}

/** A reply in the background as /chat/send's events: `event: started`, deltas with their offset as `id`, then done or error. */
async function* backgroundEvents(c: Context<AppEnv>, placed: Placed, live: LiveText<Finished>, signal: AbortSignal): AsyncGenerator<SSEMessage, void, undefined> {
  yield { event: "started", data: JSON.stringify({ contextId: placed.contextId, messageId: placed.questionId, replyId: placed.replyId }) };
  for await (const event of live.follow(0, signal)) {
    if (event.type === "text") yield { id: String(event.offset), data: JSON.stringify({ delta: event.text }) };
    else if (event.type === "error") yield { event: "error", data: JSON.stringify(errorBody(streamError(c, event.error))) };
    else if (event.result.status === "failed") yield { event: "error", data: JSON.stringify(errorBody(streamError(c, event.result.error))) };
    else {
      const { response: _response, ...rest } = event.result.reply;
      yield { event: "done", data: JSON.stringify({ ...rest, status: event.result.status }) };
    }
  }
}

/** /chat/send's events: `data: {delta}`, then `event: done` with the reply without `response`, or `event: error`. */
async function* chatEvents(
  c: Context<AppEnv>,
  first: IteratorResult<ChatEvent>,
  events: AsyncGenerator<ChatEvent>,
  stored: (reply: ChatReply) => void,
): AsyncGenerator<SSEMessage, void, undefined> {
  try {
    for (let next = first; !next.done; next = await events.next()) {
      const event = next.value;
      if (event.type === "delta") yield { data: JSON.stringify({ delta: event.text }) };
      if (event.type !== "done") continue;
      stored(event.reply);
      const { response: _response, ...rest } = event.reply;
      yield { event: "done", data: JSON.stringify(rest) };
    }
  } catch (err) {
    yield { event: "error", data: JSON.stringify(errorBody(streamError(c, err))) };
  } finally {
    await events.return(undefined);
  }
}

/** A retry with the same Idempotency-Key: the first reply again, uncharged, as asked (whole, or as events). */
function replay(c: Context<AppEnv>, reply: ChatReply, stream: boolean): Response {
  c.header("Idempotent-Replayed", "true");
  setChargedHeaders(c, reply.credits, reply.model);
  if (!stream) return c.json(reply, 200);
  const { response, ...rest } = reply;
  return sseReply(c, new AbortController(), (async function* () {
    yield { data: JSON.stringify({ delta: response }) };
    yield { event: "done", data: JSON.stringify(rest) };
  })());
}

/** A new context is named after its first message; a title follows in the background where people see it (titles.ts). */
function titleNewContext(c: Context<AppEnv>, principal: Principal, opened: ReadyMessage, reply: ChatReply): void {
  const work = titleWork(c.get("deps"), principal, opened, reply, c.get("requestId"));
  if (work) keep(c, c.get("deps"), work);
}

/** The title request of a new context's first reply, where titles are wanted (titles.ts); undefined where not. */
function titleWork(deps: Deps, principal: Principal, opened: ReadyMessage, reply: ChatReply, requestId: string): Promise<void> | undefined {
  const { placement } = opened;
  if (!placement.isNew) return undefined;
  const model = titleModelFor(deps, principal, reply.model);
  if (!model) return undefined;
  return writeTitle(deps, { userId: placement.userId, contextId: placement.contextId, model, message: placement.message, reply: reply.response, requestId });
}

/** Keeps work that outlives the reply: Workers' waitUntil, or the Node server's own keeping. */
function keep(c: Context<AppEnv>, deps: Deps, work: Promise<unknown>): void {
  if (!waitUntil(c, work)) deps.background?.(work);
}
