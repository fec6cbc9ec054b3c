// npm run bench: runs every benchmark script in bench/ one after another, so none competes
// with another for the two cores. Each writes its section of BENCHMARKS.md.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { resolve } from "node:path";

const only = process.argv.slice(2);
const scripts = readdirSync(import.meta.dirname)
  .filter((f) => f.endsWith(".ts") && !["run.ts", "support.ts"].includes(f) && !f.endsWith(".d.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
let failed = 0;
for (const script of scripts) {
  console.log(`\n=== bench/${script}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", resolve(import.meta.dirname, script)], { stdio: "inherit" });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
