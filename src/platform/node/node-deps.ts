import type { Client } from "@libsql/client";
import type { Config } from "../config";
import { createRuntime, type Deps, type RuntimeOptions } from "../deps";
import { openDatabase } from "./open-database";
import { nodeClientAddress } from "./serve-node";
import { createUpstreamPool } from "./upstream-pool";
import { webFilesFrom } from "./web-files";

export interface NodeDepsOptions extends Omit<RuntimeOptions, "upstreamFetch"> {
  /** A libSQL URL: an embedded `file:` (served on a database thread) or a remote server. */
  databaseUrl: string;
  databaseAuthToken?: string;
  /** The built web client (web/dist) to serve beside the API; without it, the API alone. */
  webDist?: string;
  /** Where share links point while PUBLIC_BASE_URL is unset (see Deps.baseUrl). */
  baseUrl?: string;
}

/**
 * Everything a Node process serves the app from: the runtime (model upstreams through a
 * kept-alive pool), the database opened and migrated (an embedded file on its own thread),
 * and the Node adapters (the client's address from the socket, the web client's files).
 * The server, the tests and the benchmarks all build their dependencies here. `client` is
 * the database's connection, for closing it.
 */
export async function createNodeDeps(config: Config, options: NodeDepsOptions): Promise<{ deps: Deps; client: Client }> {
  const { databaseUrl, databaseAuthToken, webDist, baseUrl, ...runtimeOptions } = options;
  const runtime = await createRuntime(config, { ...runtimeOptions, upstreamFetch: createUpstreamPool() });
  const { db, client, databaseFileProblem } = await openDatabase(databaseUrl, databaseAuthToken);
  const deps: Deps = {
    ...runtime,
    db,
    databaseFileProblem,
    clientAddress: nodeClientAddress(config.CLIENT_IP_HEADER),
    assets: webDist === undefined ? undefined : webFilesFrom(webDist),
    baseUrl,
  };
  return { deps, client };
}
