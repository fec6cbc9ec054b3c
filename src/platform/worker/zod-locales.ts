// The Worker bundle's stand-in for zod's table of locales (see [alias] in wrangler.toml).
// zod re-exports every locale as `z.locales`, and since the whole `z` namespace is handed
// to @hono/zod-openapi no bundler can drop them: about a third of the bundle. The service
// speaks English, the only locale zod itself loads.
export { default as en } from "zod/v4/locales/en.js";
