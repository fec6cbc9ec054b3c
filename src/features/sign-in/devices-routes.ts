import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { Id, serviceId } from "../../platform/http/service-id";
import { endOtherSessions, endSession, listSessions } from "./sessions";

// The person's signed-in devices (their sessions). Listing is open to every credential;
// ending sessions needs the person (a session or an identity provider's token), as managing
// API keys does.

const SessionSchema = z
  .object({
    id: serviceId("ses", "ses_Qm4b8Xz0Lk2Vt7cYwE1rHg"),
    method: z.enum(["wallet", "provider", "local"]).openapi({ description: "How the session began" }),
    device: z.string().openapi({ example: "Firefox on Linux", description: "A coarse description of the device, from its User-Agent" }),
    createdAt: z.string().openapi({ format: "date-time" }),
    lastUsedAt: z.string().openapi({ format: "date-time", description: "Its last refresh (access tokens are refreshed every few minutes while in use)" }),
    current: z.boolean().openapi({ description: "Whether it is the session making this request" }),
  })
  .openapi("DeviceSession");

const listRoute = authenticatedRoute({
  method: "get",
  path: "/me/sessions",
  tags: ["sign-in"],
  summary: "The person's sessions (signed-in devices), most recently used first",
  responses: {
    200: { description: "The sessions", content: { "application/json": { schema: z.object({ items: z.array(SessionSchema) }).openapi("DeviceSessions") } } },
  },
});

const idParam = z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "ses_Qm4b8Xz0Lk2Vt7cYwE1rHg" }) });

const endOneRoute = authenticatedRoute(
  {
    method: "delete",
    path: "/me/sessions/{id}",
    tags: ["sign-in"],
    summary: "Sign one device out: its session ends, its refresh token stops working",
    request: { params: idParam },
    responses: { 204: { description: "Signed out" } },
  },
  { jwtOnly: true, errors: [404] },
);

const endOthersRoute = authenticatedRoute(
  {
    method: "delete",
    path: "/me/sessions",
    tags: ["sign-in"],
    summary: "Sign out everywhere else: every session but the one asking",
    responses: {
      200: {
        description: "How many sessions ended",
        content: { "application/json": { schema: z.object({ ended: z.number().int().openapi({ example: 2 }) }).openapi("EndedSessions") } },
      },
    },
  },
  { jwtOnly: true },
);

const currentSession = (principal: { via: string; sessionId?: string }) => (principal.via === "session" ? principal.sessionId : undefined);

export const deviceRoutes = createRouter()
  .openapi(listRoute, async (c) => {
    const { db } = c.get("deps");
    const principal = c.get("principal");
    const current = currentSession(principal);
    const items = await listSessions(db, principal.userId);
    return c.json(
      {
        items: items.map((s) => ({ ...s, createdAt: s.createdAt.toISOString(), lastUsedAt: s.lastUsedAt.toISOString(), current: s.id === current })),
      },
      200,
    );
  })
  .openapi(endOneRoute, async (c) => {
    const deps = c.get("deps");
    const { id } = c.req.valid("param");
    await endSession(deps, c.get("principal").userId, id, deps.now());
    return c.body(null, 204);
  })
  .openapi(endOthersRoute, async (c) => {
    const deps = c.get("deps");
    const principal = c.get("principal");
    const ended = await endOtherSessions(deps, principal.userId, currentSession(principal), deps.now());
    return c.json({ ended }, 200);
  });
