import { existsSync } from "node:fs";

/** Debian's chromium (apt-get install chromium); CHROMIUM_PATH overrides. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const hasChromium = existsSync(chromiumPath);
