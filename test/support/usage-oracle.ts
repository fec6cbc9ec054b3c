import { FIRST_TOKEN_BUCKETS } from "../../schema/index";
import { utcDay } from "../../src/features/account/credits";
import { firstTokenBucket, firstTokenLog2, geometricMeanOf, medianOf } from "../../src/features/account/first-token-histogram";
import type { UsageRow } from "../../src/features/admin/usage-report";

/** A usage row as a test reads it from usage_events. */
export interface UsageRowRead {
  userId: string | null;
  /** ms since the epoch. */
  at: number;
  model: string;
  kind: string;
  outcome: string;
  credits: number;
  inputTokens: number | null;
  outputTokens: number | null;
  tokensEstimated: boolean | number | null;
  firstTokenMs: number | null;
}

/** A row of GET /admin/usage but for its ratings and names, which other reads make (usage-report.test.ts checks them). */
export type ReportRow = Omit<UsageRow, "name" | "ratingsUp" | "ratingsDown">;

type Prices = Record<string, { inputPricePerMillion?: number; outputPricePerMillion?: number }>;

/**
 * GET /admin/usage as the usage rows themselves make it, reading medians the rollups' way
 * (a histogram by day and model, the geometric mean by person): what the rollups must report.
 */
export function reportFromUsageRows(
  all: UsageRowRead[],
  range: { from: string; to: string },
  groupBy: string,
  options: { prices?: Prices; /** A time's log2 (thousandths) by person; default its own, as the chat path adds it. */ log2?: (ms: number) => number } = {},
): ReportRow[] {
  const prices = options.prices ?? {};
  const log2 = options.log2 ?? firstTokenLog2;
  const rows = all.filter((e) => utcDay(new Date(e.at)) >= range.from && utcDay(new Date(e.at)) <= range.to);
  const groups = new Map<string | null, UsageRowRead[]>();
  for (const e of rows) {
    const key = groupBy === "day" ? utcDay(new Date(e.at)) : groupBy === "model" ? e.model : e.userId;
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }
  return [...groups]
    .map(([key, list]) => {
      const times = list.flatMap((e) => (e.firstTokenMs === null ? [] : [e.firstTokenMs]));
      const histogram = Array<number>(FIRST_TOKEN_BUCKETS).fill(0);
      for (const ms of times) histogram[firstTokenBucket(ms)]!++;
      const priced = list.filter((e) => prices[e.model]);
      const cost = priced.length === 0
        ? null
        : priced.reduce((sum, e) => sum + ((e.inputTokens ?? 0) * (prices[e.model]!.inputPricePerMillion ?? 0) + (e.outputTokens ?? 0) * (prices[e.model]!.outputPricePerMillion ?? 0)) / 1_000_000, 0);
      const median =
        groupBy === "user"
          ? geometricMeanOf(
              times.length,
              times.reduce((sum, ms) => sum + log2(ms), 0),
            )
          : medianOf(histogram);
      return {
        key,
        messages: list.filter((e) => e.kind === "message" && e.outcome === "ok").length,
        credits: list.reduce((sum, e) => sum + e.credits, 0),
        inputTokens: list.reduce((sum, e) => sum + (e.inputTokens ?? 0), 0),
        outputTokens: list.reduce((sum, e) => sum + (e.outputTokens ?? 0), 0),
        estimatedTokenRows: list.filter((e) => Boolean(e.tokensEstimated)).length,
        failed: list.filter((e) => e.outcome === "failed").length,
        medianTimeToFirstTokenMs: median,
        cost: cost === null ? null : Math.round(cost * 1e6) / 1e6,
      };
    })
    .sort((a, b) => String(a.key).localeCompare(String(b.key)));
}
