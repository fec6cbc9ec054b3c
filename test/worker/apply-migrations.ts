import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// The same migrations/ folder that `wrangler d1 migrations apply` and the libSQL migrator use.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
