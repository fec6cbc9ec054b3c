import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { encodeCursor, pageQuery } from "../../platform/http/paging";
import { adminRoute } from "./admin-route";
import { listAudit } from "./audit";

const AuditEventSchema = z
  .object({
    id: z.string().openapi({ example: "aud_0Mz2k4Q7x1Yb9nT3vW5rLp" }),
    at: z.string().openapi({ format: "date-time" }),
    actorId: z.string().openapi({ description: "The admin who acted (a user id)" }),
    actorName: z.string().nullable().openapi({ description: "That admin's name now; null once their account is erased" }),
    action: z
      .enum(["user.suspend", "user.unsuspend", "user.grant", "user.plan", "user.erase", "invite.create", "invite.delete"])
      .openapi({ description: "What was done" }),
    targetId: z.string().nullable().openapi({ description: "The account acted on, or the invite; null for none" }),
    targetName: z.string().nullable().openapi({ description: "The account's name now; null for an invite, or once the account is erased" }),
    details: z.record(z.string(), z.unknown()).openapi({ description: "What the action took: `reason`, `amount` and `note`, `plan`, the invite's `inviteId`, `uses`, `plan`, `expiresAt`, `note`" }),
  })
  .openapi("AuditEvent");

const auditRoute = adminRoute({
  method: "get",
  path: "/admin/audit",
  summary: "What admins did, newest first (admins only)",
  request: { query: pageQuery(200, 50) },
  responses: {
    200: { description: "A page of the audit log; nextCursor is null on the last page", content: { "application/json": { schema: z.object({ items: z.array(AuditEventSchema), nextCursor: z.string().nullable() }).openapi("AuditLog") } } },
  },
});

export const auditRoutes = createRouter().openapi(auditRoute, async (c) => {
  const { limit, cursor } = c.req.valid("query");
  const page = await listAudit(c.get("deps").db, { limit, after: cursor });
  return c.json({ items: page.items, nextCursor: page.next && encodeCursor(page.next) }, 200);
});
