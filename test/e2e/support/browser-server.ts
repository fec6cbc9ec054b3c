import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { TestProject } from "vitest/node";
import { hasChromium, testBrowserPath } from "./chromium";

/**
 * One headless Chromium (its headless shell where installed: ./chromium.ts) for the whole
 * browser project: each test file connects to it (startStack) and works in contexts of its
 * own, which share nothing. Launching one per stack cost every file a second or more. Its
 * fake microphone plays a spoken sentence made with espeak-ng (silence where espeak-ng is
 * missing).
 */
export default async function setup(project: TestProject) {
  if (!hasChromium) return;
  const dir = mkdtempSync(join(tmpdir(), "e2e-voice-"));
  const audio = speechWav(join(dir, "speech.wav"));
  const server = await chromium.launchServer({
    executablePath: testBrowserPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
      ...(audio ? [`--use-file-for-fake-audio-capture=${audio}`] : []),
      // Nothing leaves the machine (an identity provider's login page asks for a web font):
      // every name but the loopback's fails to resolve.
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ],
  });
  project.provide("chromiumEndpoint", server.wsEndpoint());
  return async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  };
}

/** A spoken sentence for Chromium's fake microphone, made with espeak-ng; undefined without it. */
function speechWav(file: string): string | undefined {
  try {
    execFileSync("espeak-ng", ["-w", file, "water the monstera every week"]);
    return file;
  } catch {
    return undefined;
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the browser project's Chromium listens (Playwright's protocol over WebSocket). */
    chromiumEndpoint: string;
  }
}
