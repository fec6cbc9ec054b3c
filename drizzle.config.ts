import { defineConfig } from "drizzle-kit";

// One schema, one migrations folder: applied by the libSQL migrator (Node, Turso) and by
// `wrangler d1 migrations apply` (D1). Generate with `npm run db:generate -- --name <topic>`.
// The libSQL migrator applies only migrations stamped later than the last one applied
// (migrations/meta/_journal.json `when`): a new one must be later than the one before it,
// which test/migrations.test.ts checks; raise it by hand if drizzle-kit stamped it earlier.
export default defineConfig({
  dialect: "sqlite",
  schema: "./schema/index.ts",
  out: "./migrations",
  casing: "snake_case",
});
