import type { RateLimit } from "@cloudflare/workers-types";

export type Verdict = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * A fixed-window limit on events per key (a user, a client address): a guard against
 * runaway clients and scripts, not a quota (credits are the quota, and they hold across
 * every instance).
 */
export interface RateLimiter {
  /** Counts one event; when over the limit, the seconds until the key may try again. */
  take(key: string, now: Date): Verdict | Promise<Verdict>;
}

/** An in-memory limiter: it knows its limit and answers at once. */
export interface MemoryRateLimiter extends RateLimiter {
  readonly perMinute: number;
  take(key: string, now: Date): Verdict;
}

const WINDOW_MS = 60_000;
const MAX_TRACKED = 50_000;

/**
 * Counts in this process's memory: exact on one Node server. The counts are a cache that may
 * be lost at any time (a restart forgets them, which only lets a client a little further);
 * on Workers each isolate would count on its own.
 */
export function createRateLimiter(perMinute: number): MemoryRateLimiter {
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

/**
 * Cloudflare's Rate Limiting binding (`[[ratelimits]]` in wrangler.toml): counted by
 * Cloudflare per location, shared by every isolate there. Its limit and period are the
 * binding's; it does not say when its window turns, so a refusal asks for a full period.
 */
export function rateLimiterFromBinding(binding: RateLimit, periodSeconds = 60): RateLimiter {
  return {
    async take(key) {
      const { success } = await binding.limit({ key });
      return success ? { ok: true } : { ok: false, retryAfterSeconds: periodSeconds };
    },
  };
}

/**
 * The key a client address is counted under. An IPv6 client is usually given a whole /64
 * and can pick any address in it, so the /64 is one client; an IPv4 address written as
 * IPv6 (`::ffff:1.2.3.4`) is that IPv4 address.
 */
export function clientKey(address: string): string {
  const plain = address.replace(/%.*$/, "").toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped) return mapped[1]!;
  if (!plain.includes(":")) return plain;
  const [head = "", tail] = plain.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16)).join(":")}::/64`;
}

/** 127.0.0.0/8 and ::1, also written as IPv4-mapped IPv6. */
export function isLoopback(address: string): boolean {
  const plain = address.toLowerCase().replace(/^::ffff:(?=\d+\.)/, "");
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(plain) || plain === "::1" || plain === "0:0:0:0:0:0:0:1";
}

/** For a limit that is turned off. */
export const unlimited: RateLimiter = { take: () => ({ ok: true }) };
