// The Worker bundle's stand-in for zod's JSON Schema conversion, both ways (core/to-json-schema.js,
// core/json-schema-generator.js and classic/from-json-schema.js; see [alias] in wrangler.toml).
// Every zod schema carries `toJSONSchema()` and a Standard Schema `jsonSchema`, and the whole
// `z` namespace is handed to @hono/zod-openapi, so no bundler can drop them; nothing in the
// Worker calls them: @asteasolutions/zod-to-openapi builds the OpenAPI document from the
// schemas' own definitions and checks. These are the names zod imports from those files.
const absent = (): never => {
  throw new Error("zod's JSON Schema conversion is left out of the Worker bundle");
};
export const initializeContext = absent;
export const handleUnrepresentable = absent;
export const processSchema = absent;
export { processSchema as process };
export const extractDefs = absent;
export const finalize = absent;
export const createToJSONSchemaMethod = () => absent;
export const createStandardJSONSchemaMethod = () => absent;
export const fromJSONSchema = absent;
export class JSONSchemaGenerator {
  constructor() {
    absent();
  }
}
