import { existsSync } from "node:fs";

/** Debian's chromium (apt-get install chromium); CHROMIUM_PATH overrides. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const hasChromium = existsSync(chromiumPath);

/**
 * The browser the tests share: Chromium's headless shell (apt-get install
 * chromium-headless-shell), the same engine and renderer without the desktop browser around
 * them, and Playwright's own default for headless Chromium. A context and a signed-in page
 * cost it about a third of the CPU the full browser spends (measured on this suite's login:
 * 0.84 CPU-s against 2.36). Where it is missing, the full browser. It has no speech
 * recognition service of its own, so the test of the browser's own recognition refusing the
 * microphone launches the full one (test/e2e/voice.test.ts).
 */
const headlessShellPath = process.env.CHROMIUM_HEADLESS_SHELL_PATH ?? "/usr/bin/chromium-headless-shell";
export const testBrowserPath = existsSync(headlessShellPath) ? headlessShellPath : chromiumPath;

/** The test browser's switches; `fakeAudioFile` is what its fake microphone plays (none: silence). */
export function testBrowserArgs(fakeAudioFile: string): string[] {
  return [
    "--no-sandbox",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    ...(fakeAudioFile ? [`--use-file-for-fake-audio-capture=${fakeAudioFile}`] : []),
    // Nothing leaves the machine (an identity provider's login page asks for a web font):
    // every name but the loopback's fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
  ];
}
