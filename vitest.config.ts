import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Vitest's order (the projects by name, each one's slowest files first, or its largest where
 * it has no timings yet, as on a fresh clone), but the workerd project (one file:
 * test/worker/workerd.test.ts) second, after the slowest file of the others. The workerd pool
 * takes about 15 s to start (Miniflare, and vite transforming the Worker in vitest's own
 * process): first, both workers waited for it; last, it left both idle for about 20 s at the
 * end of a run. Second, it starts in one worker while the other runs that first file (a whole
 * run on 2 cores: 286 s against 327 s).
 */
class WorkerdSecond extends BaseSequencer {
  override async sort(files: TestSpecification[]) {
    const sorted = slowFirst(await super.sort(files));
    const workerd = (file: TestSpecification) => file.project.name === "workerd";
    const others = sorted.filter((file) => !workerd(file));
    return [...others.slice(0, 1), ...sorted.filter(workerd), ...others.slice(1)];
  }
}

/**
 * Small files that take 10-15 s each, mostly waiting on processes they start (`npm run dev`,
 * servers killed and restarted, wrangler's bundle): first among their project's files. Without
 * timings of an earlier run (a fresh clone, CI) vitest orders files by size, and these ran
 * last: a fresh clone's run ended with dev-cron.test.ts alone for 7 s, the other worker idle.
 */
const SLOW_SMALL_FILES = ["test/dev-cron.test.ts", "test/crash.test.ts", "test/worker-bundle.test.ts"];

function slowFirst(files: TestSpecification[]): TestSpecification[] {
  const slow = (file: TestSpecification) => SLOW_SMALL_FILES.some((name) => file.moduleId.endsWith(`/${name}`));
  const rest = files.filter((file) => !slow(file));
  const at = rest.findIndex((file) => file.project.name === "node");
  return at < 0 ? [...rest, ...files.filter(slow)] : [...rest.slice(0, at), ...files.filter(slow), ...rest.slice(at)];
}

// Three projects in one run: Node (real libSQL files, real HTTP servers on 127.0.0.1),
// workerd (the real Worker over D1, test/worker/vitest.config.ts) and browser (the web
// client in headless Chromium against the real Node server, test/e2e/). They share the
// workers: a browser file runs beside the others. (Held to one file at a time with
// fileParallelism: false, the browser files ran after everything else, alone, with a core
// idle for about five minutes.)
export default defineConfig({
  test: {
    // At least two files at a time: vitest's default is one fewer than the cores, which on
    // a 2-core machine runs one file at a time, and most files wait on servers and timers
    // more than they compute (on 2 cores: 501 s for the whole run against 567 s; three at a
    // time did no better).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: WorkerdSecond },
    reporters: ["default", "./test/e2e/support/chromium-notice.ts", "./test/support/summary-reporter.ts"],
    projects: [
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/worker/**", "test/e2e/**", "node_modules/**"],
          globalSetup: ["./test/support/build-server.ts", "./test/support/migrated-database.ts"],
          // A worker's files share its modules: importing the app again for each of 47 files
          // cost about 75 s of CPU. No test keeps state in a module; each builds its own app
          // and database (createHarness) or server.
          isolate: false,
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      "./test/worker/vitest.config.ts",
      {
        test: {
          name: "browser",
          include: ["test/e2e/**/*.test.ts"],
          // As the Node project: a worker's files share their modules (Playwright's client
          // among them) instead of importing them again for each file, and no file keeps
          // state in a module (each starts its own stack). Ten of these files on 2 cores:
          // 104 s instead of 119 s, 115 s of CPU instead of 139.
          isolate: false,
          globalSetup: ["./test/support/build-server.ts", "./test/e2e/support/build-client.ts", "./test/e2e/support/fake-microphone.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // expect.poll gives up after 1 s by default: too soon for a page on a busy machine.
          expect: { poll: { timeout: 15_000 } },
        },
      },
    ],
  },
});
