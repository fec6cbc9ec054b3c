// A worker thread's first module: it registers tsx, as `tsx` does for the main thread
// (Node 20 does not carry loader hooks into workers), then runs the thread's TypeScript
// entry, given as workerData.entry.
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.entry);
