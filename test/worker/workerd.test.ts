// The workerd project's test files, run as one file (vitest.config.ts beside this includes only
// this one). Vitest hands each file to whichever of its workers is free, and a second worker
// taking a workerd file started a second workerd and a second Miniflare over the same
// options, about 10 s in which neither worker ran a test (the run's timeline: both waited from
// 37 s to 48 s). As one file, the project runs in one worker, one workerd, while the other
// worker goes on with the Node and browser files. A file alone still runs by its describe's
// name: `npm run test:worker -- -t "chat in workerd"`.
// Every other *.test.ts here, so that a file added to the folder runs without being listed.
import.meta.glob(["./*.test.ts", "!./workerd.test.ts"], { eager: true });
