// npm run bench [section…]: runs each section's script in its own process, one after
// another, so none competes with another for the cores. Each writes its section of
// BENCHMARKS.md. `npm run bench -- plants` runs one section.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

// One line per section: its script in bench/.
const sections = [
  "plants",
  "chat",
  "worker",
  "search",
  "usage",
  "web",
  "lighthouse",
  "attachments",
  "before-after",
];

const asked = process.argv.slice(2);
const unknown = asked.filter((a) => !sections.includes(a));
if (unknown.length > 0) {
  console.error(`no such section: ${unknown.join(", ")}; the sections are ${sections.join(", ")}`);
  process.exit(2);
}
let failed = 0;
for (const section of sections.filter((s) => asked.length === 0 || asked.includes(s))) {
  console.log(`\n=== bench/${section}.ts`);
  const started = Date.now();
  const result = spawnSync(process.execPath, ["--import", "tsx", resolve(import.meta.dirname, `${section}.ts`)], { stdio: "inherit" });
  console.log(`=== bench/${section}.ts: ${result.status === 0 ? "done" : "FAILED"} in ${Math.round((Date.now() - started) / 1000)} s`);
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
