import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { migrate } from "drizzle-orm/libsql/migrator";
import { dbFromLibsql } from "./db";

const MIGRATIONS = resolve(import.meta.dirname, "../migrations");

/**
 * Opens a libSQL database on Node (an embedded file, or a remote libSQL server) and brings
 * it to the latest migration in migrations/. Used by the Node server, the tests and bench.
 */
export async function openDatabase(url: string, authToken?: string) {
  if (url.startsWith("file:")) mkdirSync(dirname(url.slice("file:".length)), { recursive: true });
  const client = createClient({ url, authToken });
  // D1 enforces foreign keys; so does this connection, so that both behave alike.
  await client.execute("PRAGMA foreign_keys = ON");
  const db = dbFromLibsql(client);
  await migrate(db, { migrationsFolder: MIGRATIONS });
  return { client, db };
}
