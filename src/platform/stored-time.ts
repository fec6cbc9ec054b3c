/** The latest time ISO 8601's four-digit years can write. */
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * A stored time as ISO 8601, never throwing. Imports now refuse times outside 2000 to a
 * century ahead (src/features/contexts/imported-contexts.ts), but files imported before held
 * some a date cannot show (ChatGPT times taken as milliseconds: year 277,000, or past what a
 * Date holds at all), and one such message must not make its whole context, its share,
 * the export or a search fail. They read as the nearest time that can be written, 1970 or
 * 9999; a time past what a Date holds reads as 9999.
 */
export function isoTime(value: Date | number): string {
  const ms = typeof value === "number" ? value : value.getTime();
  if (Number.isNaN(ms)) return new Date(LATEST_MS).toISOString();
  return new Date(Math.min(Math.max(ms, 0), LATEST_MS)).toISOString();
}
