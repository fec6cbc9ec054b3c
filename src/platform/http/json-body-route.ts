import { getRefId } from "@asteasolutions/zod-to-openapi";
import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { ZodType } from "zod";
import type { AppEnv } from "../deps";
import { ApiError } from "./errors";
import { isJsonContentType, UNSUPPORTED_MEDIA_TYPE } from "./json-body";
import { describeZodError, fieldOf } from "./router";

const JSON_MEDIA = "application/json";

/** The schema behind each body reference made by withJsonBody, for documentJsonBodies. */
const bodySchemas = new WeakMap<object, ZodType>();

/**
 * The route with its JSON body validated by our own middleware from the exact parse
 * (`c.get("jsonBody")`, see json-body.ts) instead of by @hono/zod-openapi. That one adds a
 * validator for every body whose schema is a zod schema, and it reads `c.req.json()`,
 * which is JSON.parse: an int64 id past 2^53 would be rounded before any schema saw it, and
 * Hono has no hook to read JSON otherwise. So the body is documented by a reference to
 * its schema (registered as a component by documentJsonBodies: the document is the same
 * as when the schema stood inline), and the route's last middleware validates it with
 * that schema and hands the result over with Hono's `c.req.addValidatedData("json", …)`:
 * handlers keep `c.req.valid("json")`, typed from the schema as before. A route without
 * a JSON body is returned as it is.
 */
export function withJsonBody<R extends RouteConfig>(route: R): R {
  const body = route.request?.body;
  const media = body?.content[JSON_MEDIA];
  if (!body || !media || !("schema" in media) || !(media.schema instanceof ZodType)) return route;
  const schema = media.schema;
  const name = getRefId(schema);
  if (!name) throw new Error(`${route.method.toUpperCase()} ${route.path}: name its body's schema with .openapi("Name"), so that the document can refer to it`);
  const reference = { $ref: `#/components/schemas/${name}` };
  bodySchemas.set(reference, schema);
  const middleware = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  // The type stays R's, whose body is the zod schema: it is what types `c.req.valid("json")`,
  // and validateJsonBody hands the handler exactly that schema's output. Only the document
  // reads the reference in its place.
  return {
    ...route,
    middleware: [...middleware, validateJsonBody(schema)],
    request: { ...route.request, body: { ...body, content: { ...body.content, [JSON_MEDIA]: { ...media, schema: reference } } } },
  } as R;
}

/** 415 unless the body is sent as JSON (or with no type, when it is empty); 400 naming the fields the schema refuses. */
function validateJsonBody(schema: ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const type = c.req.header("Content-Type");
    if (type !== undefined && !isJsonContentType(type)) throw new ApiError("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE);
    const body = c.get("jsonBody");
    const result = await schema.safeParseAsync(body === undefined ? {} : body);
    if (!result.success) throw new ApiError("invalid_request", describeZodError(result.error, "request body"), { field: fieldOf(result.error) });
    c.req.addValidatedData("json", result.data as object);
    await next();
  };
}

/**
 * Registers the schema of every body withJsonBody documents by reference as a component of
 * the app's document, once all routes are mounted.
 */
export function documentJsonBodies(app: OpenAPIHono<AppEnv>): void {
  const registered = new Set<ZodType>();
  for (const definition of app.openAPIRegistry.definitions) {
    if (definition.type !== "route") continue;
    for (const media of Object.values(definition.route.request?.body?.content ?? {})) {
      const schema = media && "schema" in media && media.schema ? bodySchemas.get(media.schema) : undefined;
      if (!schema || registered.has(schema)) continue;
      registered.add(schema);
      app.openAPIRegistry.register(getRefId(schema)!, schema);
    }
  }
}
