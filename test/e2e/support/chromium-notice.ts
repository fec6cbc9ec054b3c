import type { Reporter } from "vitest/node";
import { chromiumPath, hasChromium, testBrowserPath } from "./chromium";

/** Says, near the end of `npm test`, why the browser tests were skipped or slower, and how to mend it. */
export default class ChromiumNotice implements Reporter {
  onTestRunEnd() {
    if (!hasChromium) {
      console.log(
        `\nBrowser tests (test/e2e) were SKIPPED: no Chromium at ${chromiumPath}.\n` +
          "Install it to run them: sudo apt-get install -y chromium chromium-headless-shell espeak-ng (or set CHROMIUM_PATH).",
      );
    } else if (testBrowserPath === chromiumPath) {
      console.log(
        "\nBrowser tests (test/e2e) ran in the full Chromium: no headless shell is installed.\n" +
          "Install it for a shorter run: sudo apt-get install -y chromium-headless-shell (or set CHROMIUM_HEADLESS_SHELL_PATH).",
      );
    }
  }
}
