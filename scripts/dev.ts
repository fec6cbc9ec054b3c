// npm run dev [-- <wrangler dev args>]: the Worker in local workerd over a local D1
// database, offline. Unless you configure an identity provider yourself (--var AUTH_…:…
// or .dev.vars), it trusts the same local-login key as `npm start`, so tokens from
// `npm run token -- <name>` work against it too.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { LOCAL_AUDIENCE, LOCAL_ISSUER, loadOrCreateLocalKey, localKeyFile } from "../src/local-login";

const args = process.argv.slice(2);
const run = (cmd: string[]) => {
  const result = spawnSync("npx", ["wrangler", ...cmd], { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

run(["d1", "migrations", "apply", "DB", "--local"]);

const configuresAuth =
  args.some((a) => a.includes("AUTH_")) || (existsSync(".dev.vars") && /^AUTH_/m.test(readFileSync(".dev.vars", "utf8")));
const vars: string[] = [];
if (!configuresAuth) {
  const key = await loadOrCreateLocalKey(localKeyFile(process.env.DATABASE_URL));
  vars.push(
    "--var", `AUTH_PUBLIC_KEY:${JSON.stringify(key.publicJwk)}`,
    "--var", `AUTH_ISSUER:${LOCAL_ISSUER}`,
    "--var", `AUTH_AUDIENCE:${LOCAL_AUDIENCE}`,
  );
  console.warn("LOCAL LOGIN: trusting tokens from `npm run token -- <name>` (no identity provider configured)");
}
run(["dev", ...vars, ...args]);
