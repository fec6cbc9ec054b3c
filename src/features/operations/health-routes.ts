import { createRoute, z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { errorResponses } from "../../platform/http/error-responses";

const health = createRoute({
  method: "get",
  path: "/health",
  tags: ["operations"],
  summary: "Liveness, including that the database can be written",
  description:
    "503 with the reason when the database is unreachable or read-only, or (Node's embedded file) when the file at its path is no longer the one the server opened.",
  responses: {
    200: { description: "Healthy", content: { "application/json": { schema: z.object({ status: z.literal("ok") }) } } },
    ...errorResponses(503),
  },
});

export const healthRoutes = createRouter().openapi(health, async (c) => {
  const { db, log, databaseFileProblem } = c.get("deps");
  const fileProblem = databaseFileProblem?.();
  if (fileProblem) {
    log.error("health check: database file", { requestId: c.get("requestId"), problem: fileProblem });
    // The path is the operator's business (it is in the log), not whoever asks /health.
    throw new ApiError(503, "the database file was deleted or replaced while the server had it open; restart the server");
  }
  try {
    // A write that changes nothing: it still needs the write lock, so it fails where a write
    // would (a read-only file, mount or replica), on libSQL and D1 alike, with no table of
    // its own and no transaction (D1 has none outside batches).
    await db.run(sql`delete from plants where 0`);
  } catch (err) {
    log.error("health check: database cannot be written", { requestId: c.get("requestId"), err });
    const readOnly = /readonly|read-only|read only/i.test(`${(err as { code?: string }).code ?? ""} ${String(err)} ${String((err as Error).cause ?? "")}`);
    throw new ApiError(503, readOnly ? "the database is read-only: writes fail" : "the database is unreachable or cannot be written");
  }
  return c.json({ status: "ok" as const }, 200);
});
