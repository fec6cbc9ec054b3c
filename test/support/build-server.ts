import type { TestProject } from "vitest/node";
import { buildServerIfNeeded } from "../../scripts/build-server.mjs";

/** The database thread's bundle in dist/, which tests run without tsx (ThreadClient.open). */
export const BUILT_DATABASE_THREAD = new URL("../../dist/database-thread-main.js", import.meta.url);

/**
 * The tests start the Node server as `npm start` runs it, from dist/ (startServerProcess):
 * built here, once, when src/ changed, and again before each rerun in watch mode.
 */
export default async function setup(project: TestProject) {
  await buildServerIfNeeded();
  project.onTestsRerun(async () => void (await buildServerIfNeeded()));
}
