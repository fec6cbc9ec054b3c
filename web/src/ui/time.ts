/** "3h 12m", "4m 05s", "12s": how long until a moment, for countdowns. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, "0")}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

/** Dates formatted off the main thread (prepare.ts): a browser's first date format costs it 60 ms or more. */
const formatted = new Map<string, string>();

export const rememberDateTime = (iso: string, text: string) => void formatted.set(iso, text);
export const isFormatted = (iso: string) => formatted.has(iso);

/** A moment in the reader's own format: "Nov 26, 2026, 9:06 AM" in the US, "26 Nov 2026, 09:06" in Britain. */
export function formatDateTime(iso: string | null): string {
  if (!iso) return "never";
  return formatted.get(iso) ?? new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function formatDay(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
}
