import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/platform/node/open-database";
import { BUILT_DATABASE_THREAD } from "./build-server";

/**
 * A database file migrated from migrations/ by the server's own openDatabase, once for the
 * Node project: each harness (./harness.ts) starts from a copy of it, whose migrations the
 * server then finds applied. Migrating each harness's file anew cost about 50 ms of CPU a
 * harness (175 against 125 ms), over some 150 harnesses a run. The WAL is checkpointed into
 * the file first, so that the file alone holds every migration. (Should migrations/ change
 * in watch mode, the server migrates a copy the rest of the way, as it would a deployed file.)
 */
export default async function setup(project: TestProject) {
  const folder = mkdtempSync(join(tmpdir(), "plant-chat-migrated-"));
  const file = join(folder, "migrated.db");
  const { client } = await openDatabase(`file:${file}`, undefined, undefined, BUILT_DATABASE_THREAD);
  await client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
  client.close();
  project.provide("migratedDatabase", file);
  return () => rmSync(folder, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    /** A database file migrated from migrations/, for harnesses to copy. */
    migratedDatabase: string;
  }
}
