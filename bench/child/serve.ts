// A server under test, in its own process: `node --import tsx bench/child/serve.ts <kind>`.
// Prints `READY <url>` once listening. Configured by environment:
//   BENCH_DB    libSQL file URL (already migrated and seeded by the parent)
//   BENCH_JWK   the public JWK the app trusts (JSON), BENCH_ISSUER / BENCH_AUDIENCE
//   BENCH_ENV   extra configuration for the app (JSON), e.g. SVC_MODEL_BASE_URL
//   BENCH_SYNCHRONOUS  a PRAGMA synchronous level to set after opening (e.g. FULL)
//   BENCH_OWNERS the user ids the plants floor lists for, in turn (JSON array)
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/platform/config";
import { createLogger } from "../../src/platform/log";
import { keepSearchIndexed } from "../../src/jobs/search-index";
import { createNodeDeps } from "../../src/platform/node/node-deps";
import { serveNode } from "../../src/platform/node/serve-node";
import { PLANT_PAGE } from "../support";

const kind = process.argv[2];
const env = process.env;

async function appFetch() {
  const config = parseConfig({
    AUTH_ISSUER: env.BENCH_ISSUER,
    AUTH_AUDIENCE: env.BENCH_AUDIENCE,
    LOG_LEVEL: "error",
    ...JSON.parse(env.BENCH_ENV ?? "{}"),
  });
  // Built as src/server.ts builds them.
  const { deps, client } = await createNodeDeps(config, {
    databaseUrl: env.BENCH_DB!,
    authSource: { kind: "jwk", jwk: JSON.parse(env.BENCH_JWK!) },
    log: createLogger("error"),
  });
  if (env.BENCH_SYNCHRONOUS) await client.execute(`PRAGMA synchronous = ${env.BENCH_SYNCHRONOUS}`);
  keepSearchIndexed(deps);
  return createApp(() => deps).fetch;
}

// The floor of the plants comparison: the statement the app sends (PLANT_PAGE) for the
// same users in turn, with no auth, no validation and no middleware.
async function plantsFloorFetch() {
  const client = createClient({ url: env.BENCH_DB!, concurrency: 1 });
  await client.execute("PRAGMA journal_mode = WAL");
  const owners = JSON.parse(env.BENCH_OWNERS!) as string[];
  let next = 0;
  return new Hono().get("/plants", async (c) => {
    const owner = owners[next++ % owners.length]!;
    const rs = await client.execute({ sql: PLANT_PAGE, args: [owner, owner, 20] });
    return c.body(rs.rows[0]![0] as string, 200, { "Content-Type": "application/json" });
  }).fetch;
}

const kinds: Record<string, () => Promise<(req: Request) => Response | Promise<Response>>> = {
  app: appFetch,
  "plants-floor": plantsFloorFetch,
};
const build = kinds[kind ?? ""];
if (!build) throw new Error(`unknown server kind ${kind}; one of ${Object.keys(kinds).join(", ")}`);
const fetch = await build();
const server = serveNode(fetch, { port: 0, hostname: "127.0.0.1" }, () => {
  console.log(`READY http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

// The parent profiles a window of the run: "profile-start", then "profile-stop" answers with
// the profile (V8's sampling profiler, as --cpu-prof, but without the start-up).
const session = new Session();
session.connect();
process.on("message", async (message: string) => {
  if (message === "profile-start") {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
    process.send!("profile-started");
  } else if (message === "profile-stop") {
    const { profile } = await session.post("Profiler.stop");
    process.send!({ profile });
  }
});
process.on("SIGTERM", () => process.exit(0));
