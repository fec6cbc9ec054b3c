/**
 * A per-instance, fixed-window request limit per user: a guard against runaway clients
 * and scripts, not a quota (credits are the quota, and they hold across every instance).
 * State is a cache that may be lost at any time, as DESIGN.md allows; on Workers each
 * isolate counts on its own.
 */
export interface RateLimiter {
  /** Counts one request; when over the limit, the seconds until the window resets. */
  take(key: string, now: Date): { ok: true } | { ok: false; retryAfterSeconds: number };
  readonly perMinute: number;
}

const WINDOW_MS = 60_000;
const MAX_TRACKED = 50_000;

export function createRateLimiter(perMinute: number): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    perMinute,
    take(key, now) {
      if (perMinute <= 0) return { ok: true };
      const t = now.getTime();
      const start = t - (t % WINDOW_MS);
      let w = windows.get(key);
      if (!w || w.start !== start) {
        if (windows.size >= MAX_TRACKED) {
          for (const [k, old] of windows) if (old.start !== start) windows.delete(k);
        }
        w = { start, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      if (w.count <= perMinute) return { ok: true };
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - t) / 1000)) };
    },
  };
}
