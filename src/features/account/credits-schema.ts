import { z } from "@hono/zod-openapi";

/** A day's credits as replies show them (GET /credits, and every charged chat reply). */
export const CreditsSchema = z
  .object({
    allowance: z.number().int().openapi({ example: 500 }),
    used: z.number().int().openapi({ example: 1 }),
    remaining: z.number().int().openapi({ example: 499 }),
    resetAt: z.string().openapi({ example: "2026-11-23T00:00:00.000Z", description: "00:00 UTC of the next day" }),
  })
  .openapi("Credits");
