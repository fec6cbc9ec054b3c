import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { errorResponses } from "../../platform/http/error-responses";

const ModelSchema = z
  .object({
    id: z.string().openapi({ example: "svc-70b" }),
    name: z.string().openapi({ example: "Service 70B" }),
    provider: z.string().openapi({ example: "svc" }),
    description: z.string(),
    speed: z.enum(["fast", "medium", "slow"]),
    contextWindow: z.number().int().openapi({ example: 131072, description: "Tokens, prompt and reply together" }),
    credits: z.number().int().openapi({ example: 1, description: "Credits one message costs" }),
    default: z.boolean().openapi({ description: "The model used when a message names none" }),
    available: z.boolean().openapi({ description: "False when this server has no credentials for its provider" }),
  })
  .openapi("Model");

const listModels = createRoute({
  method: "get",
  path: "/models",
  tags: ["chat"],
  summary: "The chat models, whether this server can reach them, and their prices",
  responses: {
    200: { description: "Every model", content: { "application/json": { schema: z.array(ModelSchema) } } },
    ...errorResponses(),
  },
});

export const modelRoutes = createRouter().openapi(listModels, (c) => {
  const models = c.get("deps").models.list().map((m) => ({
    id: m.id,
    name: m.name,
    provider: m.provider,
    description: m.description,
    speed: m.speed,
    contextWindow: m.contextWindow,
    credits: m.credits,
    default: m.default,
    available: m.available,
  }));
  return c.json(models, 200);
});
