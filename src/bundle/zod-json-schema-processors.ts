// The Worker bundle's stand-in for zod's JSON Schema processors (core/json-schema-processors.js;
// see [alias] in wrangler.toml and zod-json-schema.ts): each zod schema type hands its
// processor to the converter the Worker leaves out. `aggregateChecks` is the real one: it
// answers a schema's `minLength`, `maximum`, `format` and so on, which the OpenAPI document
// is built from.
export { aggregateChecks } from "../../node_modules/zod/v4/core/json-schema-processors.js";

const absent = (): never => {
  throw new Error("zod's JSON Schema conversion is left out of the Worker bundle");
};
export const toJSONSchema = absent;
export const allProcessors = {};
export const stringProcessor = absent;
export const numberProcessor = absent;
export const booleanProcessor = absent;
export const bigintProcessor = absent;
export const symbolProcessor = absent;
export const nullProcessor = absent;
export const undefinedProcessor = absent;
export const voidProcessor = absent;
export const neverProcessor = absent;
export const anyProcessor = absent;
export const unknownProcessor = absent;
export const dateProcessor = absent;
export const enumProcessor = absent;
export const literalProcessor = absent;
export const nanProcessor = absent;
export const templateLiteralProcessor = absent;
export const fileProcessor = absent;
export const successProcessor = absent;
export const customProcessor = absent;
export const functionProcessor = absent;
export const transformProcessor = absent;
export const mapProcessor = absent;
export const setProcessor = absent;
export const arrayProcessor = absent;
export const objectProcessor = absent;
export const unionProcessor = absent;
export const intersectionProcessor = absent;
export const tupleProcessor = absent;
export const recordProcessor = absent;
export const nullableProcessor = absent;
export const nonoptionalProcessor = absent;
export const defaultProcessor = absent;
export const prefaultProcessor = absent;
export const catchProcessor = absent;
export const pipeProcessor = absent;
export const readonlyProcessor = absent;
export const promiseProcessor = absent;
export const optionalProcessor = absent;
export const lazyProcessor = absent;
