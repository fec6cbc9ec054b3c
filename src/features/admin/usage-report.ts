import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../platform/db";
import type { ModelEntry } from "../../platform/models/catalog";
import { geometricMeanOf, medianOf } from "../account/first-token-histogram";
import { columnName, DAY_FIELDS, PERSON_FIELDS, REPORT_FIELDS } from "../account/usage-rollups";

// ---------------------------------------------------------------------------------------
// GET /admin/usage: messages, credits, tokens, failed exchanges, median time to first
// token and the operator's cost, per day, model or person, over a range of UTC days. It
// reads the usage rollups (schema/usage-rollups.ts), never the usage rows themselves: by day
// or model, a row per day and model of the range; by person, each person's totals per model
// at the range's end less those before its start (two rows at most, however long the range),
// and the erased accounts' days. One statement, whose rows SQLite hands back as one JSON
// document: the database thread hands a result over value by value, about 2 µs each, which
// was most of a year's report (BENCHMARKS.md, "Usage report"). Sums are kept per (key,
// model), so that each model's price applies to its own tokens; titles count as the
// operator's tokens and cost, not as messages.
// ---------------------------------------------------------------------------------------

export type GroupBy = "day" | "model" | "user";

export interface UsageRow {
  /** The day (YYYY-MM-DD), the model id, or the user id (null: erased accounts). */
  key: string | null;
  messages: number;
  credits: number;
  inputTokens: number;
  outputTokens: number;
  /** Rows whose token counts are estimates (the provider gave none). */
  estimatedTokenRows: number;
  failed: number;
  /** The median time to first token, read off the rollups (first-token-histogram.ts). */
  medianTimeToFirstTokenMs: number | null;
  /** What the catalog's prices make of the tokens; null where no model of the group has a price. */
  cost: number | null;
}

/** The person of the erased accounts' usage in the statement's rows: the report's null. */
const ERASED = "";

type Prices = ReadonlyMap<string, Pick<ModelEntry, "inputPricePerMillion" | "outputPricePerMillion">>;

/** A (key, model) part as the statement gives it: `[key, model, ...the report's sums, ...the time to first token's]`. */
type Part = [string, string, ...number[]];

/** The report for the UTC days `from` … `to` (both included), grouped by `groupBy`; prices from the catalog's entries. */
export async function usageReport(db: Db, range: { from: string; to: string }, groupBy: GroupBy, prices: Prices): Promise<UsageRow[]> {
  if (range.from > range.to) return [];
  const person = groupBy === "user";
  const row = await db.get<{ parts: string | null }>(person ? personParts(range) : dayParts(range, groupBy));
  const parts = JSON.parse(row?.parts ?? "[]") as Part[];
  return report(parts, prices, person ? (t) => geometricMeanOf(t[0]!, t[1]!) : medianOf);
}

const columns = (fields: readonly string[]) => sql.raw(fields.map(columnName).join(", "));

/** By day or model: the rows of the range's days, one per day and model. */
function dayParts(range: { from: string; to: string }, groupBy: "day" | "model"): SQL {
  return sql`select json_group_array(json_array(${sql.raw(groupBy)}, model, ${columns(DAY_FIELDS)})) as parts
    from usage_days where day between ${range.from} and ${range.to}`;
}

/**
 * By person: for each person and model used in the range, the totals at its end (the running
 * totals, or the day's row at or before the end) less those before its start; and the erased
 * accounts' days of the range, as the person ''.
 */
function personParts(range: { from: string; to: string }): SQL {
  const { from, to } = range;
  const atEnd = (f: string) => `coalesce(a.${columnName(f)}, t.${columnName(f)}) - coalesce(b.${columnName(f)}, 0)`;
  // The latest row of the person and model at or before a day; only looked for where it is needed.
  const latest = (when: SQL, comparison: SQL) =>
    sql`case when ${when} then (select max(c.day) from usage_user_cumulative c where c.user_id = t.user_id and c.model = t.model and ${comparison}) end`;
  return sql`select json_group_array(json_array(user_id, model, ${columns(PERSON_FIELDS)})) as parts from (
    select t.user_id, t.model, ${sql.raw(PERSON_FIELDS.map((f) => `${atEnd(f)} as ${columnName(f)}`).join(", "))}
    from usage_user_totals t
      left join usage_user_cumulative a on a.user_id = t.user_id and a.model = t.model and a.day = ${latest(sql`t.last_day > ${to}`, sql`c.day <= ${to}`)}
      left join usage_user_cumulative b on b.user_id = t.user_id and b.model = t.model and b.day = ${latest(sql`t.first_day < ${from}`, sql`c.day < ${from}`)}
    where t.first_day <= ${to} and t.last_day >= ${from} and (t.last_day <= ${to} or a.day >= ${from})
    union all
    select ${ERASED}, model, ${sql.raw(PERSON_FIELDS.map((f) => `sum(${columnName(f)})`).join(", "))} from usage_erased_days where day between ${from} and ${to} group by model)`;
}

/**
 * The parts summed per key, each priced by its model; the time to first token's numbers
 * (after the report's sums) made a median by `median`; sorted by key.
 */
function report(parts: Part[], prices: Prices, median: (times: number[]) => number | null): UsageRow[] {
  const totals = new Map<string | null, { sums: number[]; cost: number | null }>();
  for (const [rawKey, model, ...values] of parts) {
    const key = rawKey === ERASED ? null : rawKey;
    const acc = totals.get(key) ?? { sums: values.map(() => 0), cost: null };
    for (let i = 0; i < values.length; i++) acc.sums[i] = (acc.sums[i] ?? 0) + (values[i] ?? 0);
    const price = prices.get(model);
    if (price && (price.inputPricePerMillion !== undefined || price.outputPricePerMillion !== undefined)) {
      const [input = 0, output = 0] = [values[2], values[3]];
      acc.cost = (acc.cost ?? 0) + (input * (price.inputPricePerMillion ?? 0) + output * (price.outputPricePerMillion ?? 0)) / 1_000_000;
    }
    totals.set(key, acc);
  }
  const n = REPORT_FIELDS.length;
  return [...totals]
    .map(([key, { sums: s, cost }]) => ({
      key,
      messages: s[0] ?? 0,
      credits: s[1] ?? 0,
      inputTokens: s[2] ?? 0,
      outputTokens: s[3] ?? 0,
      estimatedTokenRows: s[4] ?? 0,
      failed: s[5] ?? 0,
      medianTimeToFirstTokenMs: median(s.slice(n)),
      cost: cost === null ? null : Math.round(cost * 1e6) / 1e6,
    }))
    .sort((a, b) => byKey.compare(String(a.key), String(b.key)));
}

/** The order of keys: the locale's, as String.localeCompare's, through one collator (localeCompare makes one per call: 0.1 s for 10,000 people). */
const byKey = new Intl.Collator();

/** The report as CSV (RFC 4180), a header line first. */
export function usageCsv(rows: UsageRow[], groupBy: GroupBy): string {
  const header = [groupBy, "messages", "credits", "inputTokens", "outputTokens", "estimatedTokenRows", "failed", "medianTimeToFirstTokenMs", "cost"];
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? "" : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const lines = rows.map((r) => [r.key, r.messages, r.credits, r.inputTokens, r.outputTokens, r.estimatedTokenRows, r.failed, r.medianTimeToFirstTokenMs, r.cost].map(cell).join(","));
  return `${[header.join(","), ...lines].join("\r\n")}\r\n`;
}
