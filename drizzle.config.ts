import { defineConfig } from "drizzle-kit";

// One schema, one migrations folder: applied by the libSQL migrator (Node, Turso) and by
// `wrangler d1 migrations apply` (D1). Generate with `npm run db:generate -- --name <topic>`.
export default defineConfig({
  dialect: "sqlite",
  schema: "./schema/index.ts",
  out: "./migrations",
  casing: "snake_case",
});
