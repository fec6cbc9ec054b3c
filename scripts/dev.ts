// npm run dev [-- <wrangler dev args>]: the Worker in local workerd over a local D1
// database, offline, serving the web client from web/dist. Unless you configure an identity
// provider yourself (--var AUTH_…:… or .dev.vars), it uses the same local-login key as
// `npm start` (issuing tokens at POST /auth/local), so tokens from `npm run token -- <name>`
// work against it too. NODE_ENV=production turns local login off. It also hands the Worker
// the Node server's session signing key (SESSION_SIGNING_KEY) unless you set one.
//
// The cron trigger runs at GET /__scheduled (`--test-scheduled`). Miniflare's own route,
// /cdn-cgi/handler/scheduled, answers 500 `exception` for a Worker with [assets] in the
// wrangler this project pins: it hands the event to the assets proxy in front of the Worker,
// which does not pass it on (workers-sdk issue 9882, fixed in wrangler 4.99). /__scheduled
// is answered by the Worker's own fetch, which `run_worker_first = true` sends every path to.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadOrCreateLocalKey, localKeyFile, sessionKeyFile } from "../src/platform/node/local-login-key";
import { applyLocalD1Migrations } from "./local-d1-migrations";

const args = process.argv.slice(2);
// This project's wrangler, run by node directly: npx took seconds to find it.
const wrangler = createRequire(import.meta.url).resolve("wrangler/bin/wrangler.js");
const run = (cmd: string[]) => {
  const result = spawnSync(process.execPath, [wrangler, ...cmd], { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

// The database `wrangler dev` will open: the default .wrangler/state, or --persist-to's.
const persistAt = args.findIndex((a) => a === "--persist-to" || a.startsWith("--persist-to="));
const persistTo = persistAt < 0 ? undefined : args[persistAt]!.includes("=") ? args[persistAt]!.slice("--persist-to=".length) : args[persistAt + 1];
try {
  const applied = await applyLocalD1Migrations(persistTo);
  console.log(applied.length ? `Applied ${applied.length} migrations to the local D1 database: ${applied.join(", ")}` : "The local D1 database is up to date.");
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

const configuresAuth =
  args.some((a) => a.includes("AUTH_")) || (existsSync(".dev.vars") && /^AUTH_/m.test(readFileSync(".dev.vars", "utf8")));
const vars: string[] = [];
if (!configuresAuth && process.env.NODE_ENV !== "production") {
  const key = await loadOrCreateLocalKey(localKeyFile(process.env.DATABASE_URL));
  // The Worker trusts this key and, like the Node server, issues tokens with it at POST /auth/local.
  vars.push("--var", `LOCAL_LOGIN_PRIVATE_JWK:${JSON.stringify(key.privateJwk)}`);
  console.warn("LOCAL LOGIN: log in with a name in the web client, or use `npm run token -- <name>` (no identity provider configured)");
}
// The sessions' signing key, as the Node server keeps it: sessions survive a restart and
// work the same under either entry.
const configuresSessions =
  args.some((a) => a.includes("SESSION_SIGNING_KEY")) || (existsSync(".dev.vars") && /^SESSION_SIGNING_KEY/m.test(readFileSync(".dev.vars", "utf8")));
if (!configuresSessions) {
  const key = await loadOrCreateLocalKey(sessionKeyFile(process.env.DATABASE_URL));
  vars.push("--var", `SESSION_SIGNING_KEY:${JSON.stringify(key.privateJwk)}`);
}
const testScheduled = args.includes("--test-scheduled") ? [] : ["--test-scheduled"];
run(["dev", ...testScheduled, ...vars, ...args]);
