import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// ---------------------------------------------------------------------------------------
// GET /admin/usage reads these, never usage_events: the same sums, added up ahead, in the
// batch that writes each usage row (src/features/account/usage-rollups.ts).
// - By day and model: a row per day and model, everyone together.
// - By person: each person's running totals per model (usage_user_totals), and what they
//   stood at at the end of each day the person used the model (usage_user_cumulative). A
//   range's sums are the totals at its end less those before its start: two rows per person
//   and model, however long the range (a row per person and month made a year's report
//   three times slower: BENCHMARKS.md, "Usage report").
// - Erased accounts' usage, by day and model (usage_erased_days): an erasure turns the
//   person's running totals back into each day's sums and adds them here.
// usage_events keeps each call for 90 days (the per-message history); these, two years.
// The migration makes them WITHOUT ROWID: a report reads them in key order, and without a
// rowid the key is the table.
// ---------------------------------------------------------------------------------------

/** The buckets of the time to first token's histogram by day and model (src/features/account/first-token-histogram.ts). */
export const FIRST_TOKEN_BUCKETS = 24;

/** The report's sums, which every rollup row keeps. */
const reportSums = () => ({
  // Answered messages (kind message, outcome ok).
  messages: integer().notNull().default(0),
  credits: integer().notNull().default(0),
  inputTokens: integer().notNull().default(0),
  outputTokens: integer().notNull().default(0),
  // Calls whose token counts are estimates.
  estimatedRows: integer().notNull().default(0),
  // Failed calls (refunded).
  failed: integer().notNull().default(0),
});

/** The streamed replies' times to first token, as a histogram: `firstTokens0` … `firstTokens23`. */
function firstTokenHistogram() {
  return Object.fromEntries(Array.from({ length: FIRST_TOKEN_BUCKETS }, (_, k) => [`firstTokens${k}`, integer().notNull().default(0)])) as Record<
    `firstTokens${number}`,
    ReturnType<typeof integer>
  >;
}

/**
 * A person's times to first token in two numbers, which stay cheap to read for every person
 * at once: how many, and the sum of their log2 in thousandths, whose mean is their geometric mean.
 */
const personSums = () => ({
  ...reportSums(),
  firstTokens: integer().notNull().default(0),
  firstTokenLog2Sum: integer().notNull().default(0),
});

/** One row per UTC day and model, everyone together: the report by day and by model. */
export const usageDays = sqliteTable("usage_days", { day: text().notNull(), model: text().notNull(), ...reportSums(), ...firstTokenHistogram() }, (t) => [
  primaryKey({ columns: [t.day, t.model] }),
]);

/** A person's running totals for a model, and the first and last days they used it. */
export const usageUserTotals = sqliteTable(
  "usage_user_totals",
  { userId: text().notNull(), model: text().notNull(), firstDay: text().notNull(), lastDay: text().notNull(), ...personSums() },
  (t) => [primaryKey({ columns: [t.userId, t.model] })],
);

/** A person's totals for a model as they stood at the end of `day`, for each day they used it. */
export const usageUserCumulative = sqliteTable(
  "usage_user_cumulative",
  { userId: text().notNull(), model: text().notNull(), day: text().notNull(), ...personSums() },
  (t) => [primaryKey({ columns: [t.userId, t.model, t.day] })],
);

/** Erased accounts' usage, one row per UTC day and model: the report by person's row for nobody. */
export const usageErasedDays = sqliteTable("usage_erased_days", { day: text().notNull(), model: text().notNull(), ...personSums() }, (t) => [
  primaryKey({ columns: [t.day, t.model] }),
]);
