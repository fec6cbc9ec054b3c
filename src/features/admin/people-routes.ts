import { z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { encodeCursor, pageQuery } from "../../platform/http/paging";
import { Id, serviceId } from "../../platform/http/service-id";
import { text } from "../../platform/http/text";
import { eraseUser, grantCredits, setPlan, suspendUser, unsuspendUser } from "./actions";
import { adminRoute } from "./admin-route";
import { getPerson, listPeople } from "./people";

// The operator's console, people: who signed up and what they use; suspend, grant, plan.

const Time = z.string().openapi({ format: "date-time" });

const PersonSchema = z
  .object({
    id: serviceId("usr", "usr_3q2-7wEjU8n5Rk1vLxZc9A"),
    name: z.string(),
    avatarUrl: z.string().nullable(),
    signInMethods: z.array(z.enum(["wallet", "provider", "local"])).openapi({ description: "The kinds of sign-in method the account has" }),
    createdAt: Time,
    lastSeenAt: Time.nullable().openapi({ description: "The latest of its sessions' refreshes, its keys' use and its model calls; null when never seen since" }),
    status: z.enum(["active", "suspended"]),
    suspendedReason: z.string().nullable().openapi({ description: "The admin's reason, while suspended" }),
    plan: z.string().openapi({ description: "The id of its plan (PLANS)", example: "default" }),
    creditsUsedToday: z.number().int().openapi({ description: "Credits of today's allowance used (UTC day)" }),
    granted: z.number().int().openapi({ description: "Granted credits left (they do not reset)" }),
    messages30Days: z.number().int().openapi({ description: "Messages answered in the last 30 days" }),
  })
  .openapi("AdminPerson");

const PersonDetailSchema = PersonSchema.extend({
  sessions: z.array(
    z.object({
      id: serviceId("ses", "ses_Qm4b8Xz0Lk2Vt7cYwE1rHg"),
      method: z.enum(["wallet", "provider", "local"]),
      device: z.string(),
      createdAt: Time,
      lastUsedAt: Time,
    }),
  ).openapi({ description: "Live sessions (signed-in devices), most recently used first" }),
  apiKeys: z.array(
    z.object({
      id: serviceId("key", "key_Jm2Hq8X0b6sVt1cYwE4rLg"),
      name: z.string(),
      prefix: z.string(),
      createdAt: Time,
      lastUsedAt: Time.nullable(),
      dailyCreditLimit: z.number().int().nullable(),
      expiresAt: Time.nullable(),
      models: z.array(z.string()).nullable(),
    }),
  ).openapi({ description: "API keys with their limits, newest first (never their secrets)" }),
  creditsPerDay: z.array(z.object({ day: z.string().openapi({ example: "2026-11-22" }), used: z.number().int() })).openapi({ description: "Credits of the allowance used per UTC day, the last 30 days, newest first" }),
}).openapi("AdminPersonDetail");

const idParam = z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "usr_3q2-7wEjU8n5Rk1vLxZc9A" }) });
const done = { 204: { description: "Done, and recorded in the audit log" } };

const listRoute = adminRoute({
  method: "get",
  path: "/admin/users",
  summary: "The accounts, newest first (admins only)",
  request: {
    query: pageQuery(200, 50).extend({
      q: z.string().max(200).optional().openapi({ description: "Matches a name or e-mail (contains, any case), an account id, or a wallet address" }),
      status: z.enum(["active", "suspended"]).optional().openapi({ description: "Only accounts in this state" }),
      plan: z.string().max(100).optional().openapi({ description: "Only accounts on this plan (the default plan includes accounts on none)" }),
    }),
  },
  responses: {
    200: { description: "A page of accounts; nextCursor is null on the last page", content: { "application/json": { schema: z.object({ items: z.array(PersonSchema), nextCursor: z.string().nullable() }).openapi("AdminPeople") } } },
  },
});

const getRoute = adminRoute(
  {
    method: "get",
    path: "/admin/users/{id}",
    summary: "One account: its summary, sessions, API keys and credits per day (admins only)",
    request: { params: idParam },
    responses: { 200: { description: "The account", content: { "application/json": { schema: PersonDetailSchema } } } },
  },
  [404],
);

const suspendRoute = adminRoute(
  {
    method: "post",
    path: "/admin/users/{id}/suspend",
    summary: "Suspend an account: its sessions end; its tokens, API keys and sign-ins answer 403 account_suspended (admins only)",
    request: {
      params: idParam,
      body: { content: { "application/json": { schema: z.strictObject({ reason: text(1, 500, { trim: true, message: "must be 1..500 characters" }).openapi({ description: "Why; the person is told it", example: "spam" }) }).openapi("Suspension") } } },
    },
    responses: done,
  },
  [404],
);

const unsuspendRoute = adminRoute(
  {
    method: "post",
    path: "/admin/users/{id}/unsuspend",
    summary: "Lift a suspension (admins only)",
    request: { params: idParam },
    responses: done,
  },
  [404],
);

const grantRoute = adminRoute(
  {
    method: "post",
    path: "/admin/users/{id}/credits",
    summary: "Grant credits that do not reset at midnight; spent after the day's allowance (admins only)",
    request: {
      params: idParam,
      body: {
        content: {
          "application/json": {
            schema: z
              .strictObject({
                amount: z.number().int().min(1).max(100_000_000).openapi({ description: "Credits to add to the granted balance", example: 1000 }),
                note: text(0, 500, { trim: true, message: "must be at most 500 characters" }).optional().openapi({ description: "Why, for the audit log" }),
              })
              .openapi("CreditGrant"),
          },
        },
      },
    },
    responses: done,
  },
  [404],
);

const planRoute = adminRoute(
  {
    method: "put",
    path: "/admin/users/{id}/plan",
    summary: "Put an account on a plan of PLANS (admins only)",
    request: {
      params: idParam,
      body: { content: { "application/json": { schema: z.strictObject({ plan: z.string().min(1).max(100).openapi({ description: "A plan id of PLANS", example: "team" }) }).openapi("PlanChange") } } },
    },
    responses: done,
  },
  [404],
);

const eraseRoute = adminRoute(
  {
    method: "delete",
    path: "/admin/users/{id}",
    summary: "Erase an account as DELETE /me does: sessions, keys, contexts, messages, shares, groups, profile, sign-in methods; usage kept anonymous (admins only)",
    request: { params: idParam },
    responses: { 204: { description: "Erased, and recorded in the audit log" } },
  },
  [404],
);

export const peopleRoutes = createRouter()
  .openapi(listRoute, async (c) => {
    const { db, config, now } = c.get("deps");
    const { limit, cursor, q, status, plan } = c.req.valid("query");
    const page = await listPeople(db, config.plans, { limit, after: cursor, q: q || undefined, status, plan: plan || undefined }, now());
    return c.json({ items: page.items, nextCursor: page.next && encodeCursor(page.next) }, 200);
  })
  .openapi(getRoute, async (c) => {
    const { db, config, now } = c.get("deps");
    return c.json(await getPerson(db, config.plans, c.req.valid("param").id, now()), 200);
  })
  .openapi(suspendRoute, async (c) => {
    await suspendUser(c.get("deps"), c.get("principal").userId, c.req.valid("param").id, c.req.valid("json").reason);
    return c.body(null, 204);
  })
  .openapi(unsuspendRoute, async (c) => {
    await unsuspendUser(c.get("deps"), c.get("principal").userId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(grantRoute, async (c) => {
    const { amount, note } = c.req.valid("json");
    await grantCredits(c.get("deps"), c.get("principal").userId, c.req.valid("param").id, amount, note || null);
    return c.body(null, 204);
  })
  .openapi(planRoute, async (c) => {
    const deps = c.get("deps");
    await setPlan({ ...deps, plans: deps.config.plans }, c.get("principal").userId, c.req.valid("param").id, c.req.valid("json").plan);
    return c.body(null, 204);
  })
  .openapi(eraseRoute, async (c) => {
    await eraseUser(c.get("deps"), c.get("principal").userId, c.req.valid("param").id);
    return c.body(null, 204);
  });
