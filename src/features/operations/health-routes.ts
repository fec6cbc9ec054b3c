import { createRoute, z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { healthProbe } from "../../../schema/index";
import { causeChain } from "../../platform/errors";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { errorResponses } from "../../platform/http/error-responses";

const health = createRoute({
  method: "get",
  path: "/health",
  tags: ["operations"],
  summary: "Liveness, including that the database can be written",
  description:
    "503 with the reason when the database is unreachable, read-only or out of disk space, or (Node's embedded file) when the file at its path is no longer the one the server opened.",
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
    throw new ApiError("unavailable", "the database file was deleted or replaced while the server had it open; restart the server");
  }
  try {
    // A write of a page, undone in the same batch: it fails where a write that grows the
    // database would (a full disk, a read-only file, mount or replica), on libSQL and D1.
    await db.batch([db.insert(healthProbe).values({ id: 1, pad: sql`zeroblob(4096)` }), db.delete(healthProbe)]);
  } catch (err) {
    log.error("health check: database cannot be written", { requestId: c.get("requestId"), err });
    throw new ApiError("unavailable", `${whyUnwritable(err)}; reading may still work`);
  }
  return c.json({ status: "ok" as const }, 200);
});

/** What a failed write says of the storage, from the SQLite code in its causes (drizzle wraps the driver's error). */
function whyUnwritable(err: unknown): string {
  for (const e of causeChain(err)) {
    const code = String((e as { code?: unknown }).code ?? "");
    if (code === "SQLITE_FULL") return "the disk is full: writes fail until space is freed";
    if (code === "SQLITE_READONLY" || /read[- ]?only/i.test(e.message)) return "the database is read-only: writes fail";
    if (code.startsWith("SQLITE_IOERR")) return "the database's storage refuses writes (an I/O error: files made immutable, a failing disk)";
  }
  return "the database is unreachable or cannot be written";
}
