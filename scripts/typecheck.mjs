// npm run typecheck: the web client's API types written from the server's OpenAPI
// document, then the three TypeScript projects (the server with its tests and benchmarks,
// the Worker's tests, the web client) checked side by side, each one's output printed
// whole once it is done. Fails if any fails.
import { spawn } from "node:child_process";

function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => resolve({ label: [command, ...args].join(" "), code: code ?? 1, output }));
  });
}

const generated = await run(process.execPath, ["--import", "tsx", "web/scripts/openapi-types.ts"]);
process.stdout.write(generated.output);
if (generated.code !== 0) process.exit(generated.code);

// Incremental: what did not change since the last check is not checked again (the build
// info lives in node_modules/.cache, one file per project).
const tsc = (project) => [
  "node_modules/typescript/bin/tsc",
  "--noEmit",
  "--incremental",
  "--tsBuildInfoFile",
  `node_modules/.cache/tsc/${project.replace(/[^a-z]+/gi, "-")}.tsbuildinfo`,
  "-p",
  project,
];
const results = await Promise.all(["tsconfig.json", "test/worker", "web"].map((project) => run(process.execPath, tsc(project))));
for (const r of results) {
  process.stdout.write(r.output);
  if (r.code !== 0) console.error(`typecheck failed: ${r.label}`);
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
