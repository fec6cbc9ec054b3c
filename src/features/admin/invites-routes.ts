import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { Id, serviceId } from "../../platform/http/service-id";
import { text } from "../../platform/http/text";
import { adminRoute } from "./admin-route";
import { createInvite, deleteInvite, listInvites } from "./invites";

// The operator's console, invites (SIGN_UP=invite): make one (its code shown once), list
// them with who used them, revoke one.

const Time = z.string().openapi({ format: "date-time" });

const InviteSchema = z
  .object({
    id: z.string().openapi({ example: "inv_Pq3c8Vz1Lm2Xt7bYwE0rHg" }),
    usesLeft: z.number().int().openapi({ description: "Accounts it may still create" }),
    expiresAt: Time.nullable().openapi({ description: "After it, the code is refused (403 invite_invalid); null: never" }),
    plan: z.string().nullable().openapi({ description: "The plan the accounts it creates start on; null: the default plan" }),
    note: z.string().nullable(),
    createdBy: z.string().nullable().openapi({ description: "The admin who made it (a user id)" }),
    createdAt: Time,
    usedBy: z.array(z.object({ id: serviceId("usr", "usr_3q2-7wEjU8n5Rk1vLxZc9A"), name: z.string(), createdAt: Time })).openapi({ description: "The accounts made with it, oldest first" }),
  })
  .openapi("Invite");

const NewInviteSchema = z
  .strictObject({
    uses: z.number().int().min(1).max(100_000).openapi({ description: "How many accounts it may create", example: 5 }),
    expiresAt: z.iso.datetime({ offset: true, error: "must be an ISO 8601 time such as 2026-12-31T00:00:00Z" }).optional().openapi({ description: "When it stops working; absent: never" }),
    plan: z.string().min(1).max(100).optional().openapi({ description: "A plan id of PLANS the accounts start on; absent: the default plan" }),
    note: text(0, 500, { trim: true, message: "must be at most 500 characters" }).optional().openapi({ description: "What it is for" }),
  })
  .openapi("NewInvite");

const createRoute = adminRoute(
  {
    method: "post",
    path: "/admin/invites",
    summary: "Make an invite for SIGN_UP=invite; its code is shown this once (admins only)",
    request: { body: { content: { "application/json": { schema: NewInviteSchema } } } },
    responses: {
      201: {
        description: "The invite, with its code",
        content: { "application/json": { schema: InviteSchema.extend({ code: z.string().openapi({ description: "The code a new account gives as inviteCode; shown this once, kept only as its SHA-256" }) }).openapi("CreatedInvite") } },
      },
    },
  },
);

const listRoute = adminRoute({
  method: "get",
  path: "/admin/invites",
  summary: "Every invite, newest first, with its uses left, expiry and who used it (admins only)",
  responses: { 200: { description: "The invites", content: { "application/json": { schema: z.object({ items: z.array(InviteSchema) }).openapi("Invites") } } } },
});

const deleteRoute = adminRoute(
  {
    method: "delete",
    path: "/admin/invites/{id}",
    summary: "Revoke an invite: its code stops working at once (admins only)",
    request: { params: z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "inv_Pq3c8Vz1Lm2Xt7bYwE0rHg" }) }) },
    responses: { 204: { description: "Revoked, and recorded in the audit log" } },
  },
  [404],
);

export const inviteRoutes = createRouter()
  .openapi(createRoute, async (c) => {
    const deps = c.get("deps");
    const body = c.req.valid("json");
    const invite = await createInvite({ ...deps, plans: deps.config.plans }, c.get("principal").userId, {
      uses: body.uses,
      expiresAt: body.expiresAt === undefined ? null : new Date(body.expiresAt),
      plan: body.plan ?? null,
      note: body.note || null,
    });
    return c.json(invite, 201);
  })
  .openapi(listRoute, async (c) => c.json({ items: await listInvites(c.get("deps").db) }, 200))
  .openapi(deleteRoute, async (c) => {
    await deleteInvite(c.get("deps"), c.get("principal").userId, c.req.valid("param").id);
    return c.body(null, 204);
  });
