import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../auth/credentials";
import { ApiError } from "../errors";
import { createRouter } from "../router";
import {
  createContext,
  decodeCursor,
  deleteContext,
  encodeCursor,
  getContext,
  listContexts,
  updateContext,
  type GroupFilter,
} from "../services/contexts";
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchContexts, searchTerms } from "../services/search";
import { authenticated, errorResponses } from "./errors";
import { intQuery } from "./query";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });

export const ContextSchema = z
  .object({
    id: z.string().openapi({ example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }),
    name: z.string().openapi({ example: "Repotting the monstera" }),
    groupId: z.string().nullable().openapi({ example: null }),
    messageCount: z.number().int().openapi({ example: 12 }),
    createdAt: iso,
    updatedAt: iso,
  })
  .openapi("Context");

const MessageSchema = z
  .object({
    id: z.string(),
    role: z.enum(["user", "assistant"]),
    content: z.string(),
    model: z.string().optional().openapi({ example: "svc-70b" }),
    createdAt: iso,
  })
  .openapi("Message");

const ContextWithMessagesSchema = ContextSchema.extend({
  messages: z.array(MessageSchema).openapi({ description: "Oldest first" }),
  nextBefore: z.string().nullable().openapi({
    description: "Pass as `before` to get the messages before these; null when these are the oldest",
  }),
}).openapi("ContextWithMessages");

const contextName = z
  .string()
  .trim()
  .min(1, "must be 1..200 characters (not counting spaces around it)")
  .max(200, "must be 1..200 characters (not counting spaces around it)")
  .openapi({ example: "Repotting the monstera" });

const idParam = z.object({ id: z.string().min(1).max(100).openapi({ param: { name: "id", in: "path" } }) });

const listRoute = createRoute({
  method: "get",
  path: "/contexts",
  tags: ["contexts"],
  summary: "List the caller's contexts, most recently updated first",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    query: z.object({
      limit: intQuery(1, 100, 20),
      cursor: z.string().optional().openapi({ description: "`nextCursor` of the previous page" }),
      groupId: z
        .string()
        .min(1)
        .max(100)
        .optional()
        .openapi({ description: "Only the contexts in this group; `none` for those in no group" }),
    }),
  },
  responses: {
    200: {
      description: "A page of contexts; `nextCursor` is null on the last page",
      content: {
        "application/json": {
          schema: z.object({ items: z.array(ContextSchema), nextCursor: z.string().nullable() }).openapi("ContextPage"),
        },
      },
    },
    ...errorResponses(400, 401, 404),
  },
});

const createContextRoute = createRoute({
  method: "post",
  path: "/contexts",
  tags: ["contexts"],
  summary: "Create an empty context",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ name: contextName, groupId: z.string().min(1).max(100).nullable().optional() }).openapi("NewContext"),
        },
      },
    },
  },
  responses: {
    201: { description: "The context", content: { "application/json": { schema: ContextSchema } } },
    ...errorResponses(400, 401, 404, 413, 415),
  },
});

const searchRoute = createRoute({
  method: "get",
  path: "/contexts/search",
  tags: ["contexts"],
  summary: "Full-text search over the caller's messages and context names, best match first",
  description:
    "Every word of `q` must occur (in any order, any case, accents ignored, English stems matched). " +
    "Quotes, operators and punctuation are searched as text. Matched words are marked `**` in the snippet.",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    query: z.object({
      q: z
        .string()
        .max(MAX_QUERY_LENGTH, `must be at most ${MAX_QUERY_LENGTH} characters`)
        .refine((q) => searchTerms(q).length > 0, "must contain at least one word with a letter or digit")
        .refine((q) => searchTerms(q).length <= MAX_QUERY_TERMS, `must hold at most ${MAX_QUERY_TERMS} words`)
        .openapi({ example: "repot monstera" }),
      limit: intQuery(1, 50, 20),
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
                  contextId: z.string(),
                  contextName: z.string(),
                  messageId: z.string().nullable(),
                  snippet: z.string().openapi({ example: "…when to **repot** a **monstera**: in spring…" }),
                  createdAt: iso,
                }),
              ),
            })
            .openapi("SearchResults"),
        },
      },
    },
    ...errorResponses(400, 401),
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "A context with its latest messages (or those before `before`), oldest first",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    params: idParam,
    query: z.object({
      limit: intQuery(1, 500, 100),
      before: z.string().min(1).max(100).optional().openapi({ description: "A message id: return the messages before it" }),
    }),
  },
  responses: {
    200: { description: "The context", content: { "application/json": { schema: ContextWithMessagesSchema } } },
    ...errorResponses(400, 401, 404),
  },
});

const patchRoute = createRoute({
  method: "patch",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "Rename a context, or move it into a group (or out of one with null)",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    params: idParam,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({ name: contextName.optional(), groupId: z.string().min(1).max(100).nullable().optional() })
            .refine((p) => p.name !== undefined || p.groupId !== undefined, "send name, groupId or both")
            .openapi("ContextPatch"),
        },
      },
    },
  },
  responses: {
    200: { description: "The context", content: { "application/json": { schema: ContextSchema } } },
    ...errorResponses(400, 401, 404, 413, 415),
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/contexts/{id}",
  tags: ["contexts"],
  summary: "Delete a context with its messages, search entries and share link",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: { params: idParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

const contextNotFound = (id: string) => new ApiError(404, `context ${id} not found`);
const groupNotFound = (id: string) => new ApiError(404, `group ${id} not found; list your groups with GET /groups`);

// /contexts/search is registered before /contexts/{id}, which would otherwise take it.
export const contextRoutes = createRouter()
  .openapi(searchRoute, async (c) => {
    const { q, limit } = c.req.valid("query");
    return c.json({ items: await searchContexts(c.var.deps.db, c.var.principal.userId, q, limit) }, 200);
  })
  .openapi(listRoute, async (c) => {
    const { limit, cursor, groupId } = c.req.valid("query");
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    if (after === null) throw new ApiError(400, "invalid query parameters: cursor: use the nextCursor of a previous page");
    const filter: GroupFilter =
      groupId === undefined ? { kind: "all" } : groupId === "none" ? { kind: "ungrouped" } : { kind: "group", groupId };
    const page = await listContexts(c.var.deps.db, c.var.principal.userId, { limit, after, filter });
    if (!page) throw groupNotFound(groupId!);
    return c.json({ items: page.items, nextCursor: page.next && encodeCursor(page.next) }, 200);
  })
  .openapi(createContextRoute, async (c) => {
    const { db, now } = c.var.deps;
    const input = c.req.valid("json");
    const context = await createContext(db, c.var.principal, input, now());
    if (!context) throw groupNotFound(input.groupId!);
    return c.json(context, 201);
  })
  .openapi(getRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { limit, before } = c.req.valid("query");
    const result = await getContext(c.var.deps.db, c.var.principal.userId, id, { limit, before });
    if (result.found) return c.json(result.context, 200);
    if (result.missing === "context") throw contextNotFound(id);
    throw new ApiError(400, `invalid query parameters: before: ${before} is not a message of context ${id}`);
  })
  .openapi(patchRoute, async (c) => {
    const { db, now } = c.var.deps;
    const { id } = c.req.valid("param");
    const patch = c.req.valid("json");
    const result = await updateContext(db, c.var.principal.userId, id, patch, now());
    if (result.found) return c.json(result.context, 200);
    throw result.missing === "context" ? contextNotFound(id) : groupNotFound(patch.groupId!);
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteContext(c.var.deps.db, c.var.principal.userId, id))) throw contextNotFound(id);
    return c.body(null, 204);
  });
