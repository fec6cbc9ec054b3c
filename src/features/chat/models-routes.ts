import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { errorResponses } from "../../platform/http/error-responses";
import { eq } from "drizzle-orm";
import { callerIsAdmin } from "../../platform/auth/admin-check";
import { optionalAuth } from "../../platform/auth/credentials";
import { planIncludes } from "../../platform/plans";
import { users } from "../../../schema/index";
import { measuredSpeeds, MIN_SPEED_SAMPLES, SPEED_SAMPLES, SPEED_WINDOW_DAYS, speedLabel, speedOf } from "./model-speed";

const ModelSchema = z
  .object({
    id: z.string().openapi({ example: "svc-70b" }),
    name: z.string().openapi({ example: "Service 70B" }),
    provider: z.string().openapi({ example: "svc" }),
    description: z.string(),
    speed: z.enum(["fast", "medium", "slow", "unknown"]).openapi({
      description:
        `From the measured output speed once the model has ${MIN_SPEED_SAMPLES} recent exchanges here (fast: 50 tokens/s or more, ` +
        "medium: 20 or more, slow: less); before that, the catalog's label, or unknown",
    }),
    contextWindow: z.number().int().openapi({ example: 131072, description: "Tokens, prompt and reply together" }),
    credits: z.number().int().openapi({ example: 1, description: "Credits one message costs" }),
    default: z.boolean().openapi({ description: "The model used when a message names none" }),
    available: z.boolean().openapi({ description: "False when this server has no credentials for its provider" }),
    setup: z.string().optional().openapi({
      example: "set ANTHROPIC_API_KEY",
      description: "Only to an admin (ADMINS), on a model that is not available: what the operator must configure for it to answer",
    }),
    images: z.boolean().openapi({ description: "Takes image content parts (POST /v1/chat/completions)" }),
    tools: z.boolean().openapi({ description: "Takes tools (POST /v1/chat/completions)" }),
    fallbacks: z.array(z.string()).openapi({ description: "Models that answer in its place when its provider fails before the first token" }),
    measured: z
      .object({
        samples: z.number().int().openapi({ description: `Recent exchanges measured (the newest ${SPEED_SAMPLES} of the last ${SPEED_WINDOW_DAYS} days)` }),
        timeToFirstTokenMs: z.number().int().nullable().openapi({ example: 420, description: "Median time to the first token of a streamed reply; null without data" }),
        tokensPerSecond: z.number().nullable().openapi({ example: 48.5, description: "Median output tokens per second; null without data" }),
      })
      .openapi({ description: "This model's speed on this deployment, measured over its recent exchanges" }),
    inPlan: z.boolean().openapi({ description: "Whether the caller's plan includes it (PLANS): with credentials, the caller's plan; without, the default plan. A model outside it answers 403 model_not_in_plan" }),
  })
  .openapi("Model");

const listModels = createRoute({
  method: "get",
  path: "/models",
  tags: ["chat"],
  summary: "The chat models, whether this server can reach them, their prices and measured speed, and which the caller's plan includes",
  description: "Public. With credentials (optional), `inPlan` is about the caller's plan; bad credentials are a 401 as anywhere.",
  middleware: [optionalAuth] as const,
  responses: {
    200: { description: "Every model", content: { "application/json": { schema: z.array(ModelSchema) } } },
    ...errorResponses(),
  },
});

export const modelRoutes = createRouter().openapi(listModels, async (c) => {
  const { db, models, now, config } = c.get("deps");
  const principal = c.get("principal");
  const userId = principal?.userId;
  const [speeds, account, admin] = await Promise.all([
    measuredSpeeds(db, models, now()),
    userId === undefined ? undefined : db.select({ planId: users.planId }).from(users).where(eq(users.id, userId)).then((rows) => rows[0]),
    callerIsAdmin(db, config.admins, principal),
  ]);
  const plan = config.plans.of(account?.planId);
  const list = models.list().map((m) => {
    const measured = speedOf(speeds, m.id);
    return {
      id: m.id,
      name: m.name,
      provider: m.provider,
      description: m.description,
      speed: speedLabel(measured, m.speed),
      contextWindow: m.contextWindow,
      credits: m.credits,
      default: m.default,
      available: m.available,
      ...(admin && !m.available && m.setup ? { setup: m.setup } : {}),
      images: m.images,
      tools: m.tools,
      fallbacks: [...m.fallbacks],
      measured,
      inPlan: planIncludes(plan, m.id),
    };
  });
  return c.json(list, 200);
});
