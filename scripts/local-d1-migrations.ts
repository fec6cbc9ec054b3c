// migrations/ applied to the local D1 database that `wrangler dev` opens, with the same
// bookkeeping as `wrangler d1 migrations apply DB --local`: a row in d1_migrations for each
// file applied, the file and its row in one batch, the files in order, those already applied
// skipped. wrangler's command starts a Miniflare (a workerd process) for each file and two
// more to read and create its table: 14 s and 16 s of CPU for this project's 21 files (then) on a
// 2-core machine. Here one Miniflare does it all, through wrangler's getPlatformProxy (the
// bindings as `wrangler dev` sees them, from wrangler.toml and the same persistence folder).
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { D1Database } from "@cloudflare/workers-types";
import { getPlatformProxy } from "wrangler";

const MIGRATIONS = resolve(import.meta.dirname, "../migrations");
/** wrangler.toml names no migrations_table: wrangler's default. */
const TABLE = "d1_migrations";

/**
 * migrations/' files in order, each as its statements: split where drizzle-kit marks them
 * (`--> statement-breakpoint`), as the libSQL migrator splits them.
 */
export function migrationFiles(dir = MIGRATIONS): Array<{ name: string; statements: string[] }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort()
    .map((name) => ({
      name,
      statements: readFileSync(join(dir, name), "utf8")
        .split("--> statement-breakpoint")
        .filter((s) => s.trim()),
    }));
}

/**
 * Applies the files not yet applied to the local database; `persistTo` is `wrangler dev
 * --persist-to`'s folder (default: wrangler's .wrangler/state). Returns the files applied.
 */
export async function applyLocalD1Migrations(persistTo?: string): Promise<string[]> {
  const { env, dispose } = await getPlatformProxy<{ DB: D1Database }>({ persist: persistTo ? { path: join(persistTo, "v3") } : true });
  try {
    const db = env.DB;
    await db
      .prepare(`create table if not exists ${TABLE} (id integer primary key autoincrement, name text unique, applied_at timestamp default current_timestamp not null)`)
      .run();
    const applied = new Set((await db.prepare(`select name from ${TABLE}`).all<{ name: string }>()).results.map((r) => r.name));
    const pending = migrationFiles().filter((m) => !applied.has(m.name));
    for (const m of pending) {
      try {
        await db.batch([...m.statements.map((s) => db.prepare(s)), db.prepare(`insert into ${TABLE} (name) values (?)`).bind(m.name)]);
      } catch (err) {
        throw new Error(`migration ${m.name} failed, and it and those after it were not applied: ${(err as Error).message}`);
      }
    }
    return pending.map((m) => m.name);
  } finally {
    await dispose();
  }
}
