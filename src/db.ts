import type { D1Database } from "@cloudflare/workers-types";
import type { Client } from "@libsql/client";
import { drizzle as drizzleD1 } from "drizzle-orm/d1";
import { drizzle as drizzleLibsql, type LibSQLDatabase } from "drizzle-orm/libsql";
import * as schema from "../schema/index";

/**
 * The database as the services see it. D1 and libSQL speak the same SQLite dialect and
 * drizzle gives both the same query builder and `batch`, so one type serves both.
 * Services use `.returning()` rather than driver-specific run() results.
 */
export type Db = LibSQLDatabase<typeof schema>;

export function dbFromLibsql(client: Client): Db {
  return drizzleLibsql(client, { schema, casing: "snake_case" });
}

export function dbFromD1(binding: D1Database): Db {
  return drizzleD1(binding as never, { schema, casing: "snake_case" }) as unknown as Db;
}
