import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { getCredits } from "./credits";
import { CreditsSchema } from "./credits-schema";
import { listUsageMessages, usageByDay } from "./usage";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { serviceId } from "../../platform/http/service-id";
import { encodeCursor, pageQuery } from "../../platform/http/paging";
import { intQuery } from "../../platform/http/query";

const DayCreditsSchema = CreditsSchema.extend({
  day: z.string().openapi({ example: "2026-11-22" }),
  granted: z.number().int().openapi({ example: 0, description: "Credits an admin granted that are left: they do not reset, and are spent once the day's allowance does not cover a message" }),
  plan: z.object({ id: z.string().openapi({ example: "default" }), name: z.string().openapi({ example: "Default" }) }).openapi({ description: "The account's plan, whose daily credits are the allowance" }),
}).openapi("DayCredits");

const credits = authenticatedRoute({
  method: "get",
  path: "/credits",
  tags: ["credits"],
  summary: "Today's chat credits, the granted credits left, and the plan",
  responses: {
    200: { description: "The caller's credits for the current UTC day", content: { "application/json": { schema: DayCreditsSchema } } },
  },
});

const usage = authenticatedRoute({
  method: "get",
  path: "/usage",
  tags: ["credits"],
  summary: "Credits used per UTC day, newest first, unused days included as 0",
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
  },
});

const UsageItemSchema = z
  .object({
    at: z.string().openapi({ example: "2026-11-22T12:00:00.000Z" }),
    model: z.string().openapi({ example: "svc-70b" }),
    contextId: serviceId("ctx", "ctx_3q2-7wEv0dQkX1sYb6nN8A")
      .nullable()
      .openapi({ description: "Null for messages sent without a context (/v1)" }),
    contextName: z.string().nullable().openapi({ description: "The context's name now; null without a context, or once it was deleted", example: "Watering the monstera" }),
    messageId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA")
      .nullable()
      .openapi({ description: "The reply the credits paid for, on its branch of the context (GET /contexts/{id}?leaf=); null without a context, or recorded before replies were named" }),
    credits: z.number().int(),
  })
  .openapi("UsageItem");

const usageMessages = authenticatedRoute({
  method: "get",
  path: "/usage/messages",
  tags: ["credits"],
  summary: "The charged messages, newest first",
  request: {
    query: pageQuery(200, 50),
  },
  responses: {
    200: {
      description: "A page of charged messages; nextCursor is null on the last page",
      content: { "application/json": { schema: z.object({ items: z.array(UsageItemSchema), nextCursor: z.string().nullable() }) } },
    },
  },
});

export const creditRoutes = createRouter()
  .openapi(credits, async (c) => {
    const { db, now, config } = c.get("deps");
    return c.json(await getCredits(db, c.get("principal").userId, now(), config.plans), 200);
  })
  .openapi(usage, async (c) => {
    const { db, now } = c.get("deps");
    return c.json({ days: await usageByDay(db, c.get("principal").userId, now(), c.req.valid("query").days) }, 200);
  })
  .openapi(usageMessages, async (c) => {
    const { limit, cursor: after } = c.req.valid("query");
    const page = await listUsageMessages(c.get("deps").db, c.get("principal").userId, { limit, after });
    return c.json({ items: page.items, nextCursor: page.next && encodeCursor(page.next) }, 200);
  });
