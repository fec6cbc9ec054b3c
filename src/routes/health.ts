import { createRoute, z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { ApiError } from "../errors";
import { createRouter } from "../router";
import { errorResponses } from "./errors";

const health = createRoute({
  method: "get",
  path: "/health",
  tags: ["operations"],
  summary: "Liveness, including the database",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: z.object({ status: z.literal("ok") }) } } },
    ...errorResponses(503),
  },
});

export const healthRoutes = createRouter().openapi(health, async (c) => {
  try {
    await c.var.deps.db.run(sql`select 1`);
  } catch (err) {
    c.var.deps.log.error("health check: database unreachable", { requestId: c.var.requestId, err });
    throw new ApiError(503, "the database is unreachable");
  }
  return c.json({ status: "ok" as const }, 200);
});
