import { errorResponses } from "../../platform/http/error-responses";
import { ContextSchema } from "./context-schema";
import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import { createRouter } from "../../platform/http/router";
import { createContext, deleteContext, getContext, listContexts, MAX_INSTRUCTIONS, rateReply, updateContext, type GroupFilter } from "./contexts";
import { MessageNotFound } from "./errors";
import { AttachmentSchema } from "../attachments/attachment-schema";
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchContexts, searchTerms } from "./search";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { encodeCursor, pageQuery } from "../../platform/http/paging";
import { boolQuery, intQuery } from "../../platform/http/query";
import { Id, serviceId } from "../../platform/http/service-id";
import { CONTROL_CHARS, text } from "../../platform/http/text";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });

const MessageSchema = z
  .object({
    id: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA"),
    role: z.enum(["user", "assistant"]),
    content: z.string(),
    model: z.string().optional().openapi({ example: "svc-70b" }),
    parentId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA").nullable().openapi({ description: "The message it follows; null for a first message" }),
    siblingIds: z.array(z.string()).openapi({
      description: "The messages that share its parent (its versions: regenerated replies, edited messages), itself included, oldest first",
    }),
    createdAt: iso,
    status: z.enum(["done", "stopped", "failed"]).optional().openapi({
      description:
        "Replies only: `stopped` when the person stopped it (what the model had written is kept), `failed` when the model failed " +
        "or the server writing it went away (what it had written is kept; nothing was charged)",
    }),
    rating: z.enum(["up", "down"]).nullable().optional().openapi({ description: "Replies only: the person's thumbs up or down, or null" }),
    attachments: z.array(AttachmentSchema).optional().openapi({ description: "The files it carries, in order (GET /attachments/{id}); absent when none" }),
  })
  .openapi("Message");

const RunningReplySchema = z
  .object({
    replyId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA"),
    parentId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZB").openapi({ description: "The user message it answers" }),
    model: z.string().openapi({ example: "svc-70b" }),
    text: z.string().openapi({ description: "What it has written so far (saved every second)" }),
    startedAt: iso,
  })
  .openapi("RunningReply");

const ContextWithMessagesSchema = ContextSchema.extend({
  running: RunningReplySchema.nullable().openapi({
    description: "A reply still being written in the background (follow it with GET /contexts/{id}/messages/{replyId}/stream), or null",
  }),
  messages: z.array(MessageSchema).openapi({ description: "One branch, oldest first" }),
  nextBefore: z.string().nullable().openapi({
    description: "Pass as `before` to get the messages before these on the same branch; null when these are the oldest",
  }),
}).openapi("ContextWithMessages");

const contextName = text(1, 200, { trim: true, message: "must be 1..200 characters (not counting spaces around it)" }).openapi({
  example: "Repotting the monstera",
});

/** Instructions as sent: text up to MAX_INSTRUCTIONS characters; blank (or null) means none. */
export const Instructions = text(0, MAX_INSTRUCTIONS, { message: `must be at most ${MAX_INSTRUCTIONS} characters` })
  .transform((v) => (v.trim() === "" ? null : v))
  .openapi({ example: "Answer briefly, in metric units." });


const idParam = z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }) });
const groupId = Id.openapi({ example: "grp_Jx0vN2b4QmS8cD1eF5gH7w" });

const listRoute = authenticatedRoute({
  method: "get",
  path: "/contexts",
  tags: ["contexts"],
  summary: "List the caller's contexts, most recently updated first",
  request: {
    query: pageQuery(100, 20).extend({
      groupId: groupId.optional().openapi({ description: "Only the contexts in this group; `none` for those in no group" }),
      archived: boolQuery(false, "`true`: only the archived contexts; by default only the others"),
      pinned: boolQuery(undefined, "`true`: only the pinned contexts, `false`: only those not pinned; by default both"),
    }),
  },
  responses: {
    200: {
      description: "A page of contexts; `nextCursor` is null on the last page",
      content: {
        "application/json": {
          schema: z
            .object({
              items: z.array(ContextSchema.extend({ answering: z.boolean().openapi({ description: "A reply is being written in it now" }) })),
              nextCursor: z.string().nullable(),
            })
            .openapi("ContextPage"),
        },
      },
    },
  },
}, { errors: [404] });

const createContextRoute = authenticatedRoute({
  method: "post",
  path: "/contexts",
  tags: ["contexts"],
  summary: "Create an empty context",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              name: contextName,
              groupId: groupId.nullable().optional(),
              instructions: Instructions.nullable().optional().openapi({ description: "A system prompt (e.g. from a preset in the profile), sent first on every message" }),
            })
            .openapi("NewContext"),
        },
      },
    },
  },
  responses: {
    201: { description: "The context", content: { "application/json": { schema: ContextSchema } } },
  },
}, { errors: [404] });

// The document's pattern for `q` only asks for a character other than a space or a control
// character. A word must also hold a letter or digit (Unicode L or N), which a pattern can
// only say with property classes (\p{L}) that the regex engines of generated clients lack
// (Python's `re` among them), so that rule and the word count are in the description, and
// the refinements below answer 400.
const SEARCH_WORDS = `[^\\s${CONTROL_CHARS}]`;

const searchRoute = authenticatedRoute({
  method: "get",
  path: "/contexts/search",
  tags: ["contexts"],
  summary: "Full-text search over the caller's messages and context names, best match first",
  description:
    "Every word of `q` must occur (in any order, any case, accents ignored, English stems matched). " +
    "Quotes, operators and punctuation are searched as text. Matched words are marked `**` in the snippet.",
  request: {
    query: z.object({
      q: text(0, MAX_QUERY_LENGTH)
        .refine((q) => searchTerms(q).length > 0, "must contain at least one word with a letter or digit")
        .refine((q) => searchTerms(q).length <= MAX_QUERY_TERMS, `must hold at most ${MAX_QUERY_TERMS} words`)
        .openapi({
          example: "repot monstera",
          pattern: SEARCH_WORDS,
          description:
            `1 to ${MAX_QUERY_TERMS} words, a word being a run of characters other than spaces and control characters ` +
            "that holds a letter or digit (Unicode categories L and N); runs without one are ignored. The pattern " +
            "asks only for one character other than a space or control character: the server checks the rest (400).",
        }),
      limit: intQuery(1, 50, 20),
      includeArchived: boolQuery(false, "`true`: search archived contexts too"),
    }),
  },
  responses: {
    200: {
      description: "Hits, best first. `messageId` is null when the context's name matched",
      content: {
        "application/json": {
          schema: z
            .object({
              items: z.array(
                z.object({
                  contextId: serviceId("ctx", "ctx_3q2-7wEv0dQkX1sYb6nN8A"),
                  contextName: z.string(),
                  messageId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA").nullable(),
                  snippet: z.string().openapi({ example: "…when to **repot** a **monstera**: in spring…" }),
                  createdAt: iso,
                }),
              ),
            })
            .openapi("SearchResults"),
        },
      },
    },
  },
});

const getRoute = authenticatedRoute({
  method: "get",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "A context with the latest messages of a branch (or those before `before`), oldest first",
  description:
    "The active branch by default; with `leaf`, the branch through that message (continued down its newest replies). " +
    "Each message carries its `parentId` and `siblingIds`. Reading a branch does not make it the active one: PATCH `leafId` does.",
  request: {
    params: idParam,
    query: z.object({
      limit: intQuery(1, 500, 100),
      before: Id.optional().openapi({ description: "A message id: return the messages before it on its branch (`leaf` is then ignored)" }),
      leaf: Id.optional().openapi({ description: "A message id: return the branch through it instead of the active one" }),
    }),
  },
  responses: {
    200: { description: "The context", content: { "application/json": { schema: ContextWithMessagesSchema } } },
  },
}, { errors: [404] });

const PATCH_FIELDS = ["name", "groupId", "instructions", "pinned", "archived", "leafId"];

const patchRoute = authenticatedRoute({
  method: "patch",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "Rename, regroup, instruct, pin or archive a context, or switch its active branch",
  description:
    "Fields left out stay as they are. `leafId` makes the branch through that message (continued down its newest replies) " +
    "the active one. A rename moves `updatedAt`; nothing else does.",
  request: {
    params: idParam,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              name: contextName.optional(),
              groupId: groupId.nullable().optional(),
              instructions: Instructions.nullable().optional().openapi({ description: "The system prompt; null or blank clears it" }),
              pinned: z.boolean().optional(),
              archived: z.boolean().optional(),
              leafId: Id.optional().openapi({ description: "A message of this context: make its branch the active one" }),
            })
            .refine((p) => Object.values(p).some((v) => v !== undefined), `send at least one of ${PATCH_FIELDS.join(", ")}`)
            .openapi("ContextPatch", { anyOf: PATCH_FIELDS.map((f) => ({ required: [f] })) }),
        },
      },
    },
  },
  responses: {
    200: { description: "The context", content: { "application/json": { schema: ContextSchema } } },
  },
}, { errors: [404] });

const deleteRoute = authenticatedRoute({
  method: "delete",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "Delete a context with its messages, search entries and share link",
  request: { params: idParam },
  responses: { 204: { description: "Deleted" } },
}, { errors: [404] });

const contextNotFound = (id: string) => new ApiError("context_not_found", `context ${excerpt(id)} not found`);
const groupNotFound = (id: string) => new ApiError("group_not_found", `group ${excerpt(id)} not found; list your groups with GET /groups`);

// /contexts/search is registered before /contexts/{id}, which would otherwise take it.
const ratingRoute = authenticatedRoute({
  method: "put",
  path: "/contexts/{id}/messages/{messageId}/rating",
  tags: ["contexts"],
  summary: "Rate a reply: thumbs up or down, or null to take the rating back",
  request: {
    params: idParam.extend({ messageId: Id.openapi({ param: { name: "messageId", in: "path" }, example: "msg_Yv3Q0k8mN2pR5sT7uW9xZA" }) }),
    body: {
      required: true,
      content: { "application/json": { schema: z.object({ rating: z.enum(["up", "down"]).nullable() }).openapi("Rating") } },
    },
  },
  responses: {
    200: { description: "The rating as stored", content: { "application/json": { schema: z.object({ rating: z.enum(["up", "down"]).nullable() }) } } },
    ...errorResponses(400, 401, 404),
  },
});

export const contextRoutes = createRouter()
  .openapi(ratingRoute, async (c) => {
    const { id, messageId } = c.req.valid("param");
    const { rating } = c.req.valid("json");
    if (!(await rateReply(c.get("deps").db, c.get("principal").userId, id, messageId, rating))) throw new MessageNotFound(messageId, id, "messageId");
    return c.json({ rating }, 200);
  })
  .openapi(searchRoute, async (c) => {
    const { q, limit, includeArchived } = c.req.valid("query");
    return c.json({ items: await searchContexts(c.get("deps").db, c.get("principal").userId, q, limit, { includeArchived }) }, 200);
  })
  .openapi(listRoute, async (c) => {
    const { limit, cursor: after, groupId, archived, pinned } = c.req.valid("query");
    const filter: GroupFilter =
      groupId === undefined ? { kind: "all" } : groupId === "none" ? { kind: "ungrouped" } : { kind: "group", groupId };
    const page = await listContexts(c.get("deps").db, c.get("principal").userId, { limit, after, filter, archived, pinned });
    if (!page) throw groupNotFound(groupId!);
    return c.json({ items: page.items, nextCursor: page.next && encodeCursor(page.next) }, 200);
  })
  .openapi(createContextRoute, async (c) => {
    const { db, now } = c.get("deps");
    const input = c.req.valid("json");
    const context = await createContext(db, c.get("principal"), input, now());
    if (!context) throw groupNotFound(input.groupId!);
    return c.json(context, 201);
  })
  .openapi(getRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { limit, before, leaf } = c.req.valid("query");
    const result = await getContext(c.get("deps").db, c.get("principal").userId, id, { limit, before, leaf });
    if (result.found) return c.json(result.context, 200);
    if (result.missing === "context") throw contextNotFound(id);
    if (result.missing === "leaf") throw new MessageNotFound(leaf!, id, "leaf");
    throw new ApiError("invalid_request", `invalid query parameters: before: ${excerpt(before!)} is not a message of context ${excerpt(id)}`);
  })
  .openapi(patchRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { id } = c.req.valid("param");
    const patch = c.req.valid("json");
    const result = await updateContext(db, c.get("principal").userId, id, patch, now());
    if (result.found) return c.json(result.context, 200);
    if (result.missing === "message") throw new MessageNotFound(patch.leafId!, id, "leafId");
    throw result.missing === "context" ? contextNotFound(id) : groupNotFound(patch.groupId!);
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteContext(c.get("deps"), c.get("principal").userId, id))) throw contextNotFound(id);
    return c.body(null, 204);
  });
