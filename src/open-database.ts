import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { migrate } from "drizzle-orm/libsql/migrator";
import { dbFromLibsql } from "./db";
import { groupCommits } from "./group-commit";

const MIGRATIONS = resolve(import.meta.dirname, "../migrations");

/**
 * Opens a libSQL database on Node (an embedded file, or a remote libSQL server) and brings
 * it to the latest migration in migrations/. Used by the Node server, the tests and bench.
 */
export async function openDatabase(url: string, authToken?: string) {
  const embedded = url.startsWith("file:");
  if (embedded) mkdirSync(dirname(url.slice("file:".length)), { recursive: true });
  // An embedded file runs every statement synchronously, so extra connections add nothing
  // but lose the per-connection pragmas below (the client opens one per overlapping call).
  const client = createClient({ url, authToken, ...(embedded ? { concurrency: 1 } : {}) });
  // D1 enforces foreign keys; so does this connection, so that both behave alike.
  await client.execute("PRAGMA foreign_keys = ON");
  if (embedded) {
    // WAL: readers never wait for the writer. synchronous=FULL: every commit is on disk
    // before the reply, so an acknowledged message survives power loss, not only a crash;
    // group commit (below) makes that one fsync per turn of the event loop, not per request.
    await client.execute("PRAGMA journal_mode = WAL");
    await client.execute("PRAGMA synchronous = FULL");
    await client.execute("PRAGMA busy_timeout = 5000");
  }
  await migrate(dbFromLibsql(client), { migrationsFolder: MIGRATIONS });
  // A remote libSQL server commits each batch itself; grouping would only add a wait.
  if (embedded) groupCommits(client);
  return { client, db: dbFromLibsql(client) };
}
