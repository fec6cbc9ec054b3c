// Builds the Node server into dist/, the JavaScript `npm start` runs: src/server.ts and the
// database thread's entry, each bundled by esbuild with the packages it uses (but for
// libSQL's and unpdf, left in node_modules: see EXTERNAL).
//   node scripts/build-server.mjs               builds
//   node scripts/build-server.mjs --if-needed   builds only when dist/ is missing, older than
//                                               src/, schema/ or this script, or built against
//                                               another package-lock.json
// Plain JavaScript, so that `npm start` needs no tsx: when dist/ is current it only reads
// modification times, and esbuild (a devDependency) is loaded only to build.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const self = fileURLToPath(import.meta.url);
const DIST = join(root, "dist");
// The lockfile by its content: installing or pruning packages rewrites it unchanged.
const STAMP = ".package-lock.sha256";
const lockfileHash = () => createHash("sha256").update(readFileSync(join(root, "package-lock.json"))).digest("hex");

/** @param {string} path the newest modification time under `path` */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

/**
 * A module's own directory stays what it is in src/: each `import.meta.dirname` is
 * rewritten to its source file's directory, reached from the bundle's (dist/ sits beside
 * src/), so paths such as `../../../migrations` or `../web/dist` resolve as they do from
 * source. `import.meta.url` is left alone: it names the bundle, which is how the database
 * thread's starter tells it runs built (src/platform/node/database-thread.ts).
 * @param {string} outdir
 * @returns {import("esbuild").Plugin}
 */
function sourceDirnames(outdir) {
  return {
    name: "source-dirnames",
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
        const { readFile } = await import("node:fs/promises");
        const contents = await readFile(path, "utf8");
        if (!contents.includes("import.meta.dirname")) return { contents, loader: "ts" };
        const fromBundle = relative(outdir, dirname(path)).split(sep).join("/");
        return { contents: contents.replaceAll("import.meta.dirname", `(import.meta.dirname + ${JSON.stringify(`/${fromBundle}`)})`), loader: "ts" };
      });
    },
  };
}

/**
 * The packages the bundle imports from node_modules: libSQL's (a native addon and the
 * loaders that find it, with the packages those need) and unpdf (pdf.js, 2 MB, loaded by the
 * first PDF uploaded). The rest is in the bundle: resolving and reading the packages' files
 * at every start (675 files opened from node_modules, 87 now) cost about a third of the
 * server's start (1.6-1.8 s of CPU, 1.0-1.1 s bundled, on 2 cores).
 */
const EXTERNAL = ["libsql", "@libsql/*", "unpdf"];

/** Bundles the server and the database thread's entry into `outdir` (dist/ by default). */
export async function buildServer(outdir = DIST) {
  const { build } = await import("esbuild");
  await build({
    absWorkingDir: root,
    entryPoints: { server: "src/server.ts", "database-thread-main": "src/platform/node/database-thread-main.ts" },
    outdir,
    bundle: true,
    external: EXTERNAL,
    // Packages written as CommonJS call require(); in an ES module bundle it has to be made.
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: true,
    logLevel: "warning",
    plugins: [sourceDirnames(outdir)],
  });
  writeFileSync(join(outdir, STAMP), lockfileHash());
}

/** Builds dist/ unless it is newer than every source it is built from and built against this lockfile. Returns whether it built. */
export async function buildServerIfNeeded() {
  const built = join(DIST, "server.js");
  const stamp = join(DIST, STAMP);
  const sources = Math.max(newest(join(root, "src")), newest(join(root, "schema")), newest(self));
  const current = existsSync(built) && statSync(built).mtimeMs >= sources && existsSync(stamp) && readFileSync(stamp, "utf8") === lockfileHash();
  if (current) return false;
  console.log(existsSync(built) ? "server sources changed: rebuilding dist/" : "building the server into dist/");
  await buildServer();
  return true;
}

if (process.argv[1] && self === process.argv[1]) {
  if (process.argv.includes("--if-needed")) await buildServerIfNeeded();
  else await buildServer();
}
