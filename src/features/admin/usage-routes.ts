import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { adminRoute } from "./admin-route";
import { usageCsv, usageReport } from "./usage-report";
import { utcDayBefore } from "../account/credits";
import { USAGE_ROLLUP_DAYS } from "../account/usage-rollups";

const DAY = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "must be a day, YYYY-MM-DD (UTC)");

const UsageRowSchema = z
  .object({
    key: z.string().nullable().openapi({ description: "The day (YYYY-MM-DD), the model id, or the user id (null: erased accounts)" }),
    name: z.string().nullable().optional().openapi({ description: "With groupBy=user only: the account's name (null: erased accounts)" }),
    messages: z.number().int().openapi({ description: "Messages answered" }),
    credits: z.number().int().openapi({ description: "Credits charged" }),
    inputTokens: z.number().int().openapi({ description: "Tokens in, titles included (the operator's)" }),
    outputTokens: z.number().int().openapi({ description: "Tokens out, titles included" }),
    estimatedTokenRows: z.number().int().openapi({ description: "Model calls whose tokens are estimates: the provider gave no counts" }),
    failed: z.number().int().openapi({ description: "Exchanges the model failed or timed out on (refunded)" }),
    medianTimeToFirstTokenMs: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Median time to the first token of streamed replies, read off sums: by day or model from a histogram (buckets a factor of √2 apart), by person their geometric mean; null without one" }),
    cost: z.number().nullable().openapi({ description: "The operator's cost from the catalog's inputPricePerMillion and outputPricePerMillion (the prices' currency); null where no model of the row has a price" }),
    ratingsUp: z.number().int().openapi({ description: "Replies written in the range that their person rated thumbs up (PUT …/rating), each counted once on the day it was written (and charged)" }),
    ratingsDown: z.number().int().openapi({ description: "The same, thumbs down" }),
  })
  .openapi("UsageReportRow");

const usageRoute = adminRoute({
  method: "get",
  path: "/admin/usage",
  summary: "Messages, credits, tokens, failures, time to first token and cost per day, model or person (admins only)",
  request: {
    query: z.object({
      from: DAY.optional().openapi({ description: "First day (UTC), included; default: 29 days before `to`" }),
      to: DAY.optional().openapi({ description: "Last day (UTC), included; default: today" }),
      groupBy: z.enum(["day", "model", "user"]).default("day").openapi({ description: "One row per day, model or person" }),
      format: z.enum(["json", "csv"]).default("json").openapi({ description: "`csv`: text/csv with a header line, for a spreadsheet" }),
    }),
  },
  responses: {
    200: {
      description: "The rows, by key",
      content: {
        "application/json": { schema: z.object({ from: z.string(), to: z.string(), groupBy: z.enum(["day", "model", "user"]), items: z.array(UsageRowSchema) }).openapi("UsageReport") },
        "text/csv": { schema: z.string().openapi({ description: "groupBy,messages,credits,inputTokens,outputTokens,estimatedTokenRows,failed,medianTimeToFirstTokenMs,cost,ratingsUp,ratingsDown" }) },
      },
    },
  },
});

const DAY_MS = 86_400_000;

export const usageRoutes = createRouter().openapi(usageRoute, async (c) => {
  const { db, config, now } = c.get("deps");
  const query = c.req.valid("query");
  const to = query.to ?? now().toISOString().slice(0, 10);
  const toMs = Date.parse(`${to}T00:00:00.000Z`) + DAY_MS;
  const from = query.from ?? new Date(toMs - 30 * DAY_MS).toISOString().slice(0, 10);
  const fromMs = Date.parse(`${from}T00:00:00.000Z`);
  if (Number.isNaN(fromMs) || Number.isNaN(toMs) || fromMs >= toMs) throw new ApiError("invalid_request", "invalid query: from must be a real day no later than to", { field: "from" });
  if (toMs - fromMs > 400 * DAY_MS) throw new ApiError("invalid_request", "invalid query: the range may cover at most 400 days", { field: "from" });
  const prices = new Map(config.catalog.models.map((m) => [m.id, m]));
  // Usage is kept USAGE_ROLLUP_DAYS: a range reaching further back is counted from there.
  const kept = utcDayBefore(now(), USAGE_ROLLUP_DAYS - 1);
  const counted = { from, to };
  if (counted.from < kept) counted.from = kept;
  const items = await usageReport(db, counted, query.groupBy, prices);
  if (query.format === "csv") {
    return c.body(usageCsv(items, query.groupBy), 200, { "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": `attachment; filename="usage-${from}-${to}-${query.groupBy}.csv"` });
  }
  return c.json({ from, to, groupBy: query.groupBy, items }, 200);
});
