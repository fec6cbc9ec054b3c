import { dirname, join } from "node:path";
import type { Client } from "@libsql/client";
import type { Config } from "../config";
import { createRuntime, type Deps, type RuntimeOptions } from "../deps";
import { loadOrCreateLocalKey, sessionKeyFile } from "./local-login-key";
import { openDatabase } from "./open-database";
import { nodeClientAddress } from "./serve-node";
import { fileBlobStore } from "./file-blob-store";
import { createUpstreamPool } from "./upstream-pool";
import { webFilesFrom } from "./web-files";

export interface NodeDepsOptions extends Omit<RuntimeOptions, "upstreamFetch" | "sessionKey" | "identityLinksMaxAgeMs"> {
  /** A libSQL URL: an embedded `file:` (served on a database thread) or a remote server. */
  databaseUrl: string;
  databaseAuthToken?: string;
  /** The built web client (web/dist) to serve beside the API; without it, the API alone. */
  webDist?: string;
  /** Where share links point while PUBLIC_BASE_URL is unset (see Deps.baseUrl). */
  baseUrl?: string;
  /** The database thread's built bundle, to run even from source (the tests: see ThreadClient.open). */
  builtDatabaseThread?: URL;
  /** Where attachments' files go; default: attachments/ beside the embedded database (./data for a remote one). */
  attachmentsDir?: string;
}

export interface NodeDeps {
  deps: Deps;
  /** The database's connection. */
  client: Client;
  /** Waits for the work replies left running (a new context's title) to finish. */
  settled(): Promise<void>;
}

/**
 * Everything a Node process serves the app from: the runtime (model upstreams through a
 * kept-alive pool, sessions signed with SESSION_SIGNING_KEY or the key kept beside the
 * database), the database opened and migrated (an embedded file on its own thread) with
 * the linked sign-in identities and the ended sessions read from it, the Node adapters (the client's address from
 * the socket, the web client's files), and a place for work that outlives its reply. The
 * server, the tests and the benchmarks all build their dependencies here.
 */
export async function createNodeDeps(config: Config, options: NodeDepsOptions): Promise<NodeDeps> {
  const { databaseUrl, databaseAuthToken, webDist, baseUrl, builtDatabaseThread, attachmentsDir, ...runtimeOptions } = options;
  const sessionKey = config.SESSION_SIGNING_KEY ? undefined : JSON.stringify((await loadOrCreateLocalKey(sessionKeyFile(databaseUrl), options.log)).privateJwk);
  // This process sees its own changes to linked identities at once (the server rereads
  // them on a timer for those of other processes sharing a remote database).
  const runtime = await createRuntime(config, { ...runtimeOptions, sessionKey, identityLinksMaxAgeMs: Infinity, upstreamFetch: createUpstreamPool() });
  // Each batch's latency, where metrics are collected (the Node server's).
  const { metrics } = runtime;
  const onBatch = options.metrics && ((seconds: number) => metrics.databaseBatch(seconds));
  const { db, client, databaseFileProblem } = await openDatabase(databaseUrl, databaseAuthToken, runtime.log, builtDatabaseThread, onBatch);
  // What earlier runs ended stays ended: the copy of the ended sessions, and the links, read before serving.
  await Promise.all([runtime.identityLinks.load(db), runtime.endedSessions.load(db, runtime.now())]);
  const background = new Set<Promise<unknown>>();
  const deps: Deps = {
    ...runtime,
    db,
    databaseFileProblem,
    clientAddress: nodeClientAddress(config.CLIENT_IP_HEADER),
    assets: webDist === undefined ? undefined : webFilesFrom(webDist),
    blobs: fileBlobStore(attachmentsDir ?? attachmentsFolder(databaseUrl)),
    baseUrl,
    background: (work) => {
      background.add(work);
      void work.finally(() => background.delete(work));
    },
  };
  return {
    deps,
    client,
    async settled() {
      while (background.size > 0) await Promise.allSettled([...background]);
    },
  };
}

/** Attachments' files: a folder beside the embedded database file, in the same private data folder. */
export function attachmentsFolder(databaseUrl: string): string {
  return join(databaseUrl.startsWith("file:") ? dirname(databaseUrl.slice("file:".length).replace(/\?.*$/, "")) : "./data", "attachments");
}
