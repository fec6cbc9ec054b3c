// The Worker bundle's stand-in for zod's schema compiler, `z.compile` (see [alias] in
// wrangler.toml): the service never calls it, and the whole `z` namespace is handed to
// @hono/zod-openapi, so no bundler can drop it. These are the names zod re-exports from it.
const absent = (): never => {
  throw new Error("z.compile is left out of the Worker bundle");
};
export const INVALID = Symbol.for("zod.compile.invalid");
export const compile = absent;
export const compileFn = absent;
export const withParser = absent;
export class ZodCompileAsyncError extends Error {}
export class ZodCompileUnsupportedError extends Error {}
