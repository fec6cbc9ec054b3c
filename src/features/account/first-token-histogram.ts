import { FIRST_TOKEN_BUCKETS } from "../../../schema/index";

// ---------------------------------------------------------------------------------------
// Times to first token as the usage rollups keep them (schema/usage-rollups.ts), so that a
// report adds them up and reads a median off the sums:
// - by day and model, a count per bucket, the buckets a factor of √2 apart from 8 ms to
//   16 s. The median is interpolated within its bucket as if the times were spread evenly on
//   a log scale there: within 19% at worst (all of a bucket's times at one end), within a few
//   per cent for times spread over a few buckets;
// - by person, how many and the sum of their log2: their geometric mean, which is their
//   median where the times are log-normally spread, as response times usually are, and an
//   estimate of it otherwise.
// ---------------------------------------------------------------------------------------

const LOWEST_MS = 8;

/**
 * The lower edge of bucket k (k ≥ 1): 8 ms × √2^(k−1), to the microsecond (16, not
 * 16.000000000000004). Bucket 0 is below 8 ms; the last, 16.4 s and over.
 */
const edge = (k: number): number => Math.round(LOWEST_MS * Math.SQRT2 ** (k - 1) * 1000) / 1000;

/** The buckets' lower edges, bucket 1's first: how many of them a time reaches is its bucket (the migration's backfill counts the same way). */
export const FIRST_TOKEN_EDGES_MS: readonly number[] = Array.from({ length: FIRST_TOKEN_BUCKETS - 1 }, (_, i) => edge(i + 1));

/** The bucket a time falls in, 0 … FIRST_TOKEN_BUCKETS − 1. */
export function firstTokenBucket(ms: number): number {
  let bucket = 0;
  for (const low of FIRST_TOKEN_EDGES_MS) if (ms >= low) bucket++;
  return bucket;
}

/** The median (the lower one of an even count, as a sorted list's) of the times counted in `counts`; null when none are. */
export function medianOf(counts: readonly number[]): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let rank = Math.floor((total - 1) / 2);
  for (let k = 0; k < counts.length; k++) {
    const n = counts[k]!;
    if (rank >= n) {
      rank -= n;
      continue;
    }
    const share = (rank + 0.5) / n;
    // Bucket 0 is taken as 5.7 … 8 ms, the last as 16.4 … 23.2 s: a factor of √2 like the others.
    const low = k === 0 ? LOWEST_MS / Math.SQRT2 : edge(k);
    return Math.round(low * Math.SQRT2 ** share);
  }
  return null;
}

/** A time's log2 in thousandths, as the rollups by person sum it (a time under 1 ms counts as 1 ms). */
export function firstTokenLog2(ms: number): number {
  return Math.round(1000 * Math.log2(Math.max(1, ms)));
}

/** The geometric mean of `count` times whose log2 (in thousandths) sum to `log2Sum`; null for none. */
export function geometricMeanOf(count: number, log2Sum: number): number | null {
  return count === 0 ? null : Math.round(2 ** (log2Sum / 1000 / count));
}

/**
 * A bucket's middle as a log2 in thousandths (2750 + 500 × bucket, on its log scale): what
 * the migration's backfill (migrations/0019_usage_rollups.sql) counts a stored time as, by
 * person, where SQLite has no log2.
 */
export function bucketMiddleLog2(bucket: number): number {
  return Math.round(1000 * Math.log2(LOWEST_MS)) - 250 + 500 * bucket;
}
