import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import { createRouter } from "../../platform/http/router";
import { MAX_API_KEYS_PER_USER, createApiKey, listApiKeys, revokeApiKey, type ApiKeySummary } from "./keys";
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
    },
    {
      error: (issue) => {
        if (issue.code !== "unrecognized_keys") return undefined;
        const keys = issue.keys.slice(0, 3).map((k) => JSON.stringify(excerpt(k)));
        return `unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}; the only field is name`;
      },
    },
  )
  .openapi("NewApiKey");

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
  })
  .openapi("ApiKey");

const CreatedApiKeySchema = z
  .object({
    id: ApiKeySchema.shape.id,
    name: ApiKeySchema.shape.name,
    key: z.string().openapi({ description: "The secret; shown this once and never again" }),
    prefix: ApiKeySchema.shape.prefix,
    createdAt: ApiKeySchema.shape.createdAt,
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
    const { db, now } = c.get("deps");
    const name = c.req.valid("json").name ?? DEFAULT_KEY_NAME;
    const created = await createApiKey(db, c.get("principal"), name, now());
    if (!created) {
      throw new ApiError(
        "api_key_limit",
        `you already have ${MAX_API_KEYS_PER_USER} API keys, the most allowed; revoke one (DELETE /keys/{id}) before creating another`,
      );
    }
    const { id, key, prefix, createdAt } = created;
    return c.json({ id, name: created.name, key, prefix, createdAt: createdAt.toISOString() }, 201);
  })
  .openapi(listKeys, async (c) => {
    const keys = await listApiKeys(c.get("deps").db, c.get("principal").userId);
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

function toJson(key: ApiKeySummary) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}
