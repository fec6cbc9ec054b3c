import { statSync } from "node:fs";
import { resolve } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { migrate } from "drizzle-orm/libsql/migrator";
import { dbFromLibsql } from "../db";
import { ThreadClient } from "./database-thread";
import { TimedClient } from "./timed-client";
import type { Logger } from "../log";
import { secureDataFolder } from "./data-folder";

const MIGRATIONS = resolve(import.meta.dirname, "../../../migrations");

/**
 * Opens a libSQL database on Node (an embedded file, or a remote libSQL server) and brings
 * it to the latest migration in migrations/. Used by the Node server, the tests and bench.
 * `builtThread`: see ThreadClient.open. `onBatch`: told each batch's seconds (GET /metrics).
 */
export async function openDatabase(url: string, authToken?: string, log?: Logger, builtThread?: URL, onBatch?: (seconds: number) => void) {
  const embedded = url.startsWith("file:");
  // Private to the service's own user: the folder 0700, the files 0600 (data-folder.ts).
  if (embedded) secureDataFolder(filePath(url), log);
  // An embedded file runs every statement synchronously, so extra connections add nothing
  // but lose the per-connection pragmas below (the client opens one per overlapping call).
  let client: Client = createClient({ url, authToken, ...(embedded ? { concurrency: 1 } : {}) });
  // D1 enforces foreign keys; so does this connection, so that both behave alike.
  await client.execute("PRAGMA foreign_keys = ON");
  if (embedded) await client.execute("PRAGMA journal_mode = WAL");
  await migrate(dbFromLibsql(client), { migrationsFolder: MIGRATIONS });
  // Past the migrations, an embedded file is served on a database thread, by one native
  // connection with each statement prepared once and concurrent batches committed
  // together, at synchronous=FULL (see ThreadClient and openConnection). WAL: readers
  // never wait for the writer. (A remote libSQL server commits each batch itself.)
  if (embedded) {
    client.close();
    client = await ThreadClient.open(filePath(url), builtThread);
  }
  if (onBatch) client = new TimedClient(client, onBatch);
  const db = dbFromLibsql(client);
  const databaseFileProblem = embedded ? watchFileIdentity(filePath(url)) : undefined;
  return { client, db, databaseFileProblem };
}

/**
 * An open SQLite file that is deleted or replaced keeps working for this process, but what
 * it writes goes to a file no one will open again: every write would be acknowledged and
 * lost at the next start. Compares the file at the path with the one opened (device and
 * inode), for the health check. Returns why they differ, or null.
 */
function watchFileIdentity(path: string): () => string | null {
  const opened = statSync(path);
  return () => {
    let now: { dev: number; ino: number } | undefined;
    try {
      now = statSync(path);
    } catch {
      now = undefined;
    }
    if (now?.dev === opened.dev && now.ino === opened.ino) return null;
    return `the database file ${resolve(path)} was ${now ? "replaced by another file" : "deleted"} while this server had it open`;
  };
}

/** The file a `file:` URL names, as @libsql/client reads it: `file:./a.db`, `file:///srv/a.db`, no query. */
function filePath(url: string): string {
  return url
    .slice("file:".length)
    .replace(/\?.*$/, "")
    .replace(/^\/\/[^/]*/, "");
}
