import type { Reporter } from "vitest/node";
import { chromiumPath, hasChromium } from "./chromium";

/** Says, near the end of `npm test`, why the browser tests were skipped and how to run them. */
export default class ChromiumNotice implements Reporter {
  onTestRunEnd() {
    if (hasChromium) return;
    console.log(
      `\nBrowser tests (test/e2e) were SKIPPED: no Chromium at ${chromiumPath}.\n` +
        "Install it to run them: sudo apt-get install -y chromium espeak-ng (or set CHROMIUM_PATH).",
    );
  }
}
