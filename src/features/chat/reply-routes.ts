import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { SSEMessage } from "hono/streaming";
import type { AppEnv } from "../../platform/deps";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorBody } from "../../platform/http/error-mapper";
import { errorResponses } from "../../platform/http/error-responses";
import { jsonData, registerEventSchema, schemaRef, sseEvent } from "../../platform/http/event-stream";
import { createRouter } from "../../platform/http/router";
import { Id } from "../../platform/http/service-id";
import type { LiveEvent } from "../../platform/live-text";
import { followReply, stopReply, type EndedReply, type ReplyRef } from "./background";
import { ModelFailed } from "./errors";
import { clientGone, sseReply, streamError } from "./exchange-wire";

// ---------------------------------------------------------------------------------------
// A reply written in the background (POST /chat/send with `background: true`), from any
// request: followed as it is written, from where a client left off, or stopped.
// ---------------------------------------------------------------------------------------

const params = z.object({
  id: Id.openapi({ param: { name: "id", in: "path" }, example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }),
  replyId: Id.openapi({ param: { name: "replyId", in: "path" }, example: "msg_Yv3Q0k8mN2pR5sT7uW9xZA" }),
});

const status = z.enum(["done", "stopped", "failed"]);

const ReplyEndSchema = z
  .object({
    messageId: z.string().openapi({ description: "The reply, stored" }),
    contextId: z.string(),
    parentId: z.string().openapi({ description: "The user message it answers" }),
    model: z.string().openapi({ example: "svc-70b" }),
    status: status.openapi({ description: "`done`, or `stopped` (what was written is kept)" }),
  })
  .openapi("ReplyStreamDone");

const ReplyStreamEvent = {
  description: "One event of a followed reply",
  oneOf: [
    sseEvent(undefined, jsonData(schemaRef("ChatStreamDelta")), "More of the reply: `data: {\"delta\":\"…\"}`, with `id` the reply's length so far (send it back as Last-Event-ID)"),
    sseEvent("done", jsonData(schemaRef("ReplyStreamDone")), "The last event: the reply is stored"),
    sseEvent("error", jsonData(schemaRef("Error")), "The last event of a reply that failed: an Error body; it was not charged"),
  ],
};

const streamRoute = authenticatedRoute({
  method: "get",
  path: "/contexts/{id}/messages/{replyId}/stream",
  tags: ["chat"],
  summary: "Follow a reply being written in the background, from its start or from Last-Event-ID, until it ends",
  description:
    "A running reply's text as it is written (GET /contexts/{id} names it in `running`), then `event: done`. A reply that has " +
    "already ended answers its stored text as one event, then done. `Last-Event-ID`: the characters the client already has.",
  request: {
    params,
    headers: z.object({
      "last-event-id": z
        .string()
        .regex(/^\d{1,9}$/, "must be the `id` of the last event received: a number of characters")
        .optional()
        .openapi({ description: "Last-Event-ID: the `id` of the last event the client has" }),
    }),
  },
  responses: {
    200: { description: "The reply as events", content: { "text/event-stream": { schema: schemaRef("ReplyStreamEvent") } } },
    ...errorResponses(400, 401, 404),
  },
});

const StoppedReplySchema = z
  .object({
    message: z.object({
      id: z.string(),
      role: z.literal("assistant"),
      content: z.string().openapi({ description: "What the model had written, kept" }),
      model: z.string(),
      parentId: z.string(),
      status,
    }),
  })
  .openapi("StoppedReply");

const stopRoute = authenticatedRoute({
  method: "post",
  path: "/contexts/{id}/messages/{replyId}/stop",
  tags: ["chat"],
  summary: "Stop a reply being written in the background; what it wrote is kept",
  description:
    "The person's message and the reply so far are stored, the reply marked `stopped`: charged like any reply when the model had " +
    "written something, refunded when it had not. A reply that already ended is answered as it is (`done`).",
  request: { params },
  responses: {
    200: { description: "The reply as stored", content: { "application/json": { schema: StoppedReplySchema } } },
    ...errorResponses(401, 404),
  },
});

const router = createRouter();
router.openAPIRegistry.register("ReplyStreamDone", ReplyEndSchema);
registerEventSchema(router, "ReplyStreamEvent", ReplyStreamEvent);

export const replyRoutes = router
  .openapi(streamRoute, async (c) => {
    const { id, replyId } = c.req.valid("param");
    const offset = Number(c.req.valid("header")["last-event-id"] ?? 0);
    const ref: ReplyRef = { userId: c.get("principal").userId, contextId: id, replyId };
    const gone = clientGone(c);
    const events = followReply(c.get("deps"), c.get("deps").liveReplies, ref, offset, gone.signal);
    // The first event is read before answering, so that an unknown reply is a 404, not a stream.
    const first = await events.next();
    return sseReply(c, gone, replyEvents(c, first, events));
  })
  .openapi(stopRoute, async (c) => {
    const { id, replyId } = c.req.valid("param");
    const ref: ReplyRef = { userId: c.get("principal").userId, contextId: id, replyId };
    const stopped = await stopReply(c.get("deps"), c.get("deps").liveReplies, ref, c.req.raw.signal);
    const { messageId, parentId, model, text } = stopped;
    return c.json({ message: { id: messageId, role: "assistant" as const, content: text, model, parentId, status: stopped.status } }, 200);
  });

/** A followed reply's events: deltas with their offset as `id`, then done or error. */
async function* replyEvents(
  c: Context<AppEnv>,
  first: IteratorResult<LiveEvent<EndedReply>>,
  events: AsyncGenerator<LiveEvent<EndedReply>, void, undefined>,
): AsyncGenerator<SSEMessage, void, undefined> {
  try {
    for (let next = first; !next.done; next = await events.next()) {
      const event = next.value;
      if (event.type === "text") yield { id: String(event.offset), data: JSON.stringify({ delta: event.text }) };
      else if (event.type === "error") yield { event: "error", data: JSON.stringify(errorBody(streamError(c, event.error))) };
      // A reply stored as failed: what it had written is in the deltas before; it was not charged.
      else if (event.result.status === "failed") yield { event: "error", data: JSON.stringify(errorBody(streamError(c, new ModelFailed(event.result.model)))) };
      else yield { event: "done", data: JSON.stringify(event.result) };
    }
  } catch (err) {
    yield { event: "error", data: JSON.stringify(errorBody(streamError(c, err))) };
  } finally {
    await events.return(undefined);
  }
}
