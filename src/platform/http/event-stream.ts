import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../deps";

// ---------------------------------------------------------------------------------------
// How the document describes a `text/event-stream` reply (POST /chat/send and
// /v1/chat/completions with `stream: true`).
//
// OpenAPI 3.1 has no schema for the items of a stream: 3.2 adds the Media Type Object's
// `itemSchema`, which a 3.1 document may not carry (its Media Type Object allows no other
// fields). For 3.0 and 3.1 the reading tools share, Schemathesis's among them, is a
// `text/event-stream` `schema` that describes ONE event, and the event is modelled as 3.2
// models it: the object an EventSource parses out of the stream, with the fields `data`
// (always a string), `event`, `id` and `retry`. A `data` that carries JSON says so with
// JSON Schema's `contentMediaType` and `contentSchema` (keywords of the 2020-12 dialect a
// 3.1 document uses), which validators read as annotations: test/contract.test.ts parses
// each event's data and checks it against them. A move to OpenAPI 3.2 would put the same
// event schema under `itemSchema`.
// ---------------------------------------------------------------------------------------

/** A JSON Schema as the document holds it. */
export type JsonSchema = { [keyword: string]: unknown };

/** A schema among the document's components. */
export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The `data` of an event that carries a JSON document described by `schema`. */
export const jsonData = (schema: JsonSchema): JsonSchema => ({
  type: "string",
  contentMediaType: "application/json",
  contentSchema: schema,
});

/**
 * One kind of event: `name` is its `event` field, or undefined for an event without one
 * (which an EventSource names "message").
 */
export function sseEvent(name: string | undefined, data: JsonSchema, description: string): JsonSchema {
  return {
    type: "object",
    description,
    required: name === undefined ? ["data"] : ["event", "data"],
    properties: { event: { type: "string", const: name ?? "message" }, data },
  };
}

type SchemaComponent = Parameters<OpenAPIHono<AppEnv>["openAPIRegistry"]["registerComponent"]>[2];

/**
 * Puts the schema of one event of a stream among the document's components (where
 * `schemaRef(name)` finds it) through `router`'s registry, which the app merges with its own.
 */
export function registerEventSchema(router: OpenAPIHono<AppEnv>, name: string, event: JsonSchema) {
  // The registry's types know OpenAPI 3.0's and 3.1's schema fields, not every JSON Schema
  // keyword a 3.1 document may use (contentSchema); the object is written out as it is.
  router.openAPIRegistry.registerComponent("schemas", name, event as SchemaComponent);
}
