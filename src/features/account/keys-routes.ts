import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import { createRouter } from "../../platform/http/router";
import { eq } from "drizzle-orm";
import type { Db } from "../../platform/db";
import type { Plans } from "../../platform/plans";
import { users } from "../../../schema/index";
import { MAX_API_KEYS_PER_USER, createApiKey, listApiKeys, revokeApiKey, type ApiKeySummary, type KeyLimits } from "./keys";
import { DisplayName } from "../../platform/http/display-name";
import { Id, serviceId } from "../../platform/http/service-id";
import { authenticatedRoute } from "../../platform/http/authenticated-route";

const DEFAULT_KEY_NAME = "default";
/** The shape of the ids this service gives keys; only such an id is ever echoed back. */
const KEY_ID = /^key_[A-Za-z0-9_-]{22}$/;

const NewApiKeySchema = z
  .strictObject(
    {
      name: DisplayName.optional().openapi({ default: DEFAULT_KEY_NAME, example: "laptop CLI" }),
      dailyCreditLimit: z.number().int().min(1).max(100_000_000).optional().openapi({ description: "The most credits the key may spend a UTC day; past it, 402 api_key_credit_limit (the account's other keys and sessions still work)", example: 100 }),
      expiresAt: z.iso.datetime({ offset: true, error: "must be an ISO 8601 time such as 2026-12-31T00:00:00Z" }).optional().openapi({ description: "After it the key answers 401 api_key_expired" }),
      models: z.array(z.string().min(1).max(200)).min(1).max(100).optional().openapi({ description: "The only models (ids of GET /models) the key may call; another answers 403 model_not_allowed_for_key" }),
    },
    {
      error: (issue) => {
        if (issue.code !== "unrecognized_keys") return undefined;
        const keys = issue.keys.slice(0, 3).map((k) => JSON.stringify(excerpt(k)));
        return `unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}; the fields are name, dailyCreditLimit, expiresAt, models`;
      },
    },
  )
  .openapi("NewApiKey");

/** A key's limits as replies show them. */
const limitFields = {
  dailyCreditLimit: z.number().int().nullable().openapi({ description: "Credits it may spend a UTC day; null: no limit but the account's" }),
  expiresAt: z.string().nullable().openapi({ format: "date-time", description: "When it stops working; null: never" }),
  models: z.array(z.string()).nullable().openapi({ description: "The only models it may call; null: any the account may" }),
};

const ApiKeySchema = z
  .object({
    id: serviceId("key", "key_Jm2Hq8X0b6sVt1cYwE4rLg"),
    name: z.string().openapi({ example: "laptop CLI" }),
    prefix: z.string().openapi({ example: "sk_Ab3dE7gH", description: "The visible start of the key" }),
    createdAt: z.string().openapi({ format: "date-time" }),
    lastUsedAt: z
      .string()
      .nullable()
      .openapi({ format: "date-time", description: "Refreshed at most once a minute; null when never used" }),
    ...limitFields,
    creditsUsedToday: z.number().int().openapi({ description: "Credits it spent today (UTC) and holds for replies in progress" }),
  })
  .openapi("ApiKey");

const CreatedApiKeySchema = z
  .object({
    id: ApiKeySchema.shape.id,
    name: ApiKeySchema.shape.name,
    key: z.string().openapi({ description: "The secret; shown this once and never again" }),
    prefix: ApiKeySchema.shape.prefix,
    createdAt: ApiKeySchema.shape.createdAt,
    ...limitFields,
  })
  .openapi("CreatedApiKey");

const createKey = authenticatedRoute({
  method: "post",
  path: "/keys",
  tags: ["keys"],
  summary: `Create an API key (identity-provider token only; at most ${MAX_API_KEYS_PER_USER} per user)`,
  description: `A caller who already has ${MAX_API_KEYS_PER_USER} keys gets 400 until they revoke one.`,
  request: { body: { required: false, content: { "application/json": { schema: NewApiKeySchema } } } },
  responses: {
    201: { description: "The new key, with its secret", content: { "application/json": { schema: CreatedApiKeySchema } } },
  },
}, { jwtOnly: true });

const listKeys = authenticatedRoute({
  method: "get",
  path: "/keys",
  tags: ["keys"],
  summary: "List the caller's API keys, newest first, without their secrets",
  responses: {
    200: { description: "The caller's keys", content: { "application/json": { schema: z.array(ApiKeySchema) } } },
  },
});

const revokeKey = authenticatedRoute({
  method: "delete",
  path: "/keys/{id}",
  tags: ["keys"],
  summary: "Revoke one of the caller's API keys; it stops working at once (identity-provider token only)",
  request: { params: z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "key_Jm2Hq8X0b6sVt1cYwE4rLg" }) }) },
  responses: { 204: { description: "Revoked" } },
}, { jwtOnly: true, errors: [404] });

export const keyRoutes = createRouter()
  .openapi(createKey, async (c) => {
    const { db, now, models, config } = c.get("deps");
    const body = c.req.valid("json");
    const name = body.name ?? DEFAULT_KEY_NAME;
    const unknown = body.models?.find((m) => !models.get(m));
    if (unknown !== undefined) throw new ApiError("invalid_request", `invalid request body: models: no model '${excerpt(unknown)}'; GET /models lists them`, { field: "models" });
    const expiresAt = body.expiresAt === undefined ? null : new Date(body.expiresAt);
    if (expiresAt && expiresAt.getTime() <= now().getTime()) throw new ApiError("invalid_request", "invalid request body: expiresAt: must be in the future", { field: "expiresAt" });
    const limits = { dailyCreditLimit: body.dailyCreditLimit ?? null, expiresAt, models: body.models ? [...new Set(body.models)] : null };
    const max = await maxKeysOf(c.get("deps"), c.get("principal").userId, config.plans);
    const created = await createApiKey(db, c.get("principal"), name, now(), limits, max);
    if (!created) {
      throw new ApiError("api_key_limit", `you already have ${max} API keys, the most allowed; revoke one (DELETE /keys/{id}) before creating another`);
    }
    const { id, key, prefix, createdAt } = created;
    return c.json({ id, name: created.name, key, prefix, createdAt: createdAt.toISOString(), ...limitsJson(created) }, 201);
  })
  .openapi(listKeys, async (c) => {
    const { db, now } = c.get("deps");
    const keys = await listApiKeys(db, c.get("principal").userId, Date.parse(`${now().toISOString().slice(0, 10)}T00:00:00.000Z`));
    return c.json(keys.map(toJson), 200);
  })
  .openapi(revokeKey, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await revokeApiKey(c.get("deps").db, c.get("principal").userId, id))) {
      // Never echo what was not an id: a caller may paste the secret itself here.
      throw new ApiError("api_key_not_found", KEY_ID.test(id) ? `API key ${id} not found` : "API key not found; use an id that GET /keys lists");
    }
    return c.body(null, 204);
  });

function toJson(key: ApiKeySummary & { creditsUsedToday: number }) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    ...limitsJson(key),
    creditsUsedToday: Number(key.creditsUsedToday),
  };
}

function limitsJson(key: KeyLimits) {
  return { dailyCreditLimit: key.dailyCreditLimit, expiresAt: key.expiresAt?.toISOString() ?? null, models: key.models };
}

/** The most keys the caller's plan lets them hold (its maxApiKeys, else the service's limit). One read. */
async function maxKeysOf(deps: { db: Db }, userId: string, plans: Plans): Promise<number> {
  const [row] = await deps.db.select({ planId: users.planId }).from(users).where(eq(users.id, userId));
  return plans.of(row?.planId).maxApiKeys ?? MAX_API_KEYS_PER_USER;
}
