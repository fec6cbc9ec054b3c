import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { adminRoute } from "./admin-route";

// The operator's console, plans: what PLANS (or PLANS_FILE) holds, for choosing one in the
// person's page and an invite. Read from the configuration, no database.

const PlanSchema = z
  .object({
    id: z.string().openapi({ example: "team" }),
    name: z.string().openapi({ example: "Team" }),
    dailyCredits: z.number().int().openapi({ description: "Credits a day, reset at 00:00 UTC" }),
    models: z.union([z.array(z.string()), z.literal("*")]).openapi({ description: 'The model ids it includes, or "*" for every model' }),
    requestsPerMinute: z.number().int().nullable().openapi({ description: "Null: the deployment's RATE_LIMIT_PER_MINUTE" }),
    maxApiKeys: z.number().int().nullable().openapi({ description: "The most API keys an account on it holds; null: the service's limit (25)" }),
    default: z.boolean().openapi({ description: "The plan of every account no admin or invite put on another; exactly one is" }),
  })
  .openapi("Plan");

const plansRoute = adminRoute({
  method: "get",
  path: "/admin/plans",
  summary: "The plans of PLANS, in their order, the default marked (admins only)",
  responses: {
    200: { description: "The plans", content: { "application/json": { schema: z.object({ items: z.array(PlanSchema) }).openapi("Plans") } } },
  },
});

export const planRoutes = createRouter().openapi(plansRoute, (c) => {
  const items = c.get("deps").config.plans.list.map((p) => ({
    id: p.id,
    name: p.name,
    dailyCredits: p.dailyCredits,
    models: p.models,
    requestsPerMinute: p.requestsPerMinute,
    maxApiKeys: p.maxApiKeys,
    default: p.default,
  }));
  return c.json({ items }, 200);
});
