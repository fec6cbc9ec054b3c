import { createRoute, z } from "@hono/zod-openapi";
import { requireAuth } from "../auth/credentials";
import { ApiError } from "../errors";
import { createRouter } from "../router";
import { getCredits } from "../services/credits";
import { decodeCursor, listUsageMessages, usageByDay } from "../services/usage";
import { authenticated, errorResponses } from "./errors";
import { intQuery } from "./query";

export const CreditsSchema = z
  .object({
    allowance: z.number().int().openapi({ example: 500 }),
    used: z.number().int().openapi({ example: 1 }),
    remaining: z.number().int().openapi({ example: 499 }),
    resetAt: z.string().openapi({ example: "2026-11-23T00:00:00.000Z", description: "00:00 UTC of the next day" }),
  })
  .openapi("Credits");

const DayCreditsSchema = CreditsSchema.extend({ day: z.string().openapi({ example: "2026-11-22" }) }).openapi("DayCredits");

const credits = createRoute({
  method: "get",
  path: "/credits",
  tags: ["credits"],
  summary: "Today's chat credits",
  security: authenticated,
  middleware: [requireAuth] as const,
  responses: {
    200: { description: "The caller's credits for the current UTC day", content: { "application/json": { schema: DayCreditsSchema } } },
    ...errorResponses(401),
  },
});

const usage = createRoute({
  method: "get",
  path: "/usage",
  tags: ["credits"],
  summary: "Credits used per UTC day, newest first, unused days included as 0",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: { query: z.object({ days: intQuery(1, 90, 30, "How many days, today included") }) },
  responses: {
    200: {
      description: "One entry per day of the range",
      content: {
        "application/json": {
          schema: z.object({ days: z.array(z.object({ day: z.string().openapi({ example: "2026-11-21" }), used: z.number().int() })) }),
        },
      },
    },
    ...errorResponses(400, 401),
  },
});

const UsageItemSchema = z
  .object({
    at: z.string().openapi({ example: "2026-11-22T12:00:00.000Z" }),
    model: z.string().openapi({ example: "svc-70b" }),
    contextId: z.string().nullable().openapi({ description: "Null for messages sent without a context (/v1)" }),
    credits: z.number().int(),
  })
  .openapi("UsageItem");

const usageMessages = createRoute({
  method: "get",
  path: "/usage/messages",
  tags: ["credits"],
  summary: "The charged messages, newest first",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    query: z.object({
      limit: intQuery(1, 200, 50, "Items per page"),
      cursor: z.string().max(200).optional().openapi({ description: "nextCursor of the previous page" }),
    }),
  },
  responses: {
    200: {
      description: "A page of charged messages; nextCursor is null on the last page",
      content: { "application/json": { schema: z.object({ items: z.array(UsageItemSchema), nextCursor: z.string().nullable() }) } },
    },
    ...errorResponses(400, 401),
  },
});

export const creditRoutes = createRouter()
  .openapi(credits, async (c) => {
    const { db, now, config } = c.var.deps;
    return c.json(await getCredits(db, c.var.principal.userId, now(), config.DAILY_CREDITS), 200);
  })
  .openapi(usage, async (c) => {
    const { db, now } = c.var.deps;
    return c.json({ days: await usageByDay(db, c.var.principal.userId, now(), c.req.valid("query").days) }, 200);
  })
  .openapi(usageMessages, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    if (after === null) throw new ApiError(400, "invalid query parameters: cursor: must be the nextCursor of a previous page");
    return c.json(await listUsageMessages(c.var.deps.db, c.var.principal.userId, { limit, after }), 200);
  });
