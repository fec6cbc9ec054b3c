/**
 * A coarse description of a device from its User-Agent ("Firefox on Windows", "Safari on
 * iPhone"), enough for a person to tell their sessions apart in Settings and no more: no
 * versions, nothing that narrows the device down further.
 */
export function describeDevice(userAgent: string | undefined): string {
  const ua = userAgent ?? "";
  const browser =
    /\bEdg(?:e|A|iOS)?\//.test(ua)
      ? "Edge"
      : /\bOPR\/|\bOpera\b/.test(ua)
        ? "Opera"
        : /\bFirefox\/|\bFxiOS\//.test(ua)
          ? "Firefox"
          : /\b(?:Headless)?Chrome\/|\bCriOS\/|\bChromium\//.test(ua)
            ? "Chrome"
            : /\bSafari\//.test(ua) && /\bVersion\//.test(ua)
              ? "Safari"
              : /^curl\//.test(ua)
                ? "curl"
                : undefined;
  const system = /\biPhone\b/.test(ua)
    ? "iPhone"
    : /\biPad\b/.test(ua)
      ? "iPad"
      : /\bAndroid\b/.test(ua)
        ? "Android"
        : /\bWindows\b/.test(ua)
          ? "Windows"
          : /\bMac OS X\b|\bMacintosh\b/.test(ua)
            ? "macOS"
            : /\bCrOS\b/.test(ua)
              ? "ChromeOS"
              : /\bLinux\b/.test(ua)
                ? "Linux"
                : undefined;
  if (browser && system) return `${browser} on ${system}`;
  return browser ?? system ?? "Unknown device";
}
