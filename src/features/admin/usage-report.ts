import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../platform/db";
import type { ModelEntry } from "../../platform/models/catalog";
import { geometricMeanOf, medianOf } from "../account/first-token-histogram";
import { columnName, DAY_FIELDS, PERSON_FIELDS, REPORT_FIELDS } from "../account/usage-rollups";

// ---------------------------------------------------------------------------------------
// GET /admin/usage: messages, credits, tokens, failed exchanges, median time to first
// token, the operator's cost and the replies' thumbs up and down, per day, model or person,
// over a range of UTC days. It reads the usage rollups (schema/usage-rollups.ts), never the
// usage rows themselves: by day or model, a row per day and model of the range; by person,
// each person's totals per model at the range's end less those before its start (a row each
// at most, however long the range), and the erased accounts' days. One statement, whose rows
// SQLite hands back as one JSON document: the database thread hands a result over value by
// value, about 2 µs each, which was most of a year's report (BENCHMARKS.md, "Usage report").
// Sums are kept per (key, model), so that each model's price applies to its own tokens;
// titles count as the operator's tokens and cost, not as messages. The ratings come from a
// second statement beside it, over the rated replies of the range (an index of their own).
// ---------------------------------------------------------------------------------------

export type GroupBy = "day" | "model" | "user";

export interface UsageRow {
  /** The day (YYYY-MM-DD), the model id, or the user id (null: erased accounts). */
  key: string | null;
  /** By user only: the account's name (null: erased accounts). */
  name?: string | null;
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
  /** Replies written in the range that their person rated thumbs up, and thumbs down (PUT …/rating). */
  ratingsUp: number;
  ratingsDown: number;
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
  // Side by side: drizzle's D1 driver cannot batch raw statements with parameters.
  const [row, rated] = await Promise.all([
    db.get<{ parts: string | null; names?: string | null }>(person ? personParts(range) : dayParts(range, groupBy)),
    db.get<{ ratings: string | null }>(ratingsOf(range, groupBy)),
  ]);
  const parts = JSON.parse(row?.parts ?? "[]") as Part[];
  const rows = report(parts, prices, person ? (t) => geometricMeanOf(t[0]!, t[1]!) : medianOf);
  const ratings = JSON.parse(rated?.ratings ?? "{}") as Record<string, [number, number]>;
  const names = person ? (JSON.parse(row?.names ?? "{}") as Record<string, string>) : undefined;
  for (const r of rows) {
    const [up, down] = (r.key !== null && ratings[r.key]) || [0, 0];
    r.ratingsUp = up;
    r.ratingsDown = down;
    if (names) r.name = r.key === null ? null : (names[r.key] ?? null);
  }
  return rows;
}

const columns = (fields: readonly string[]) => sql.raw(fields.map(columnName).join(", "));

/** By day or model: the rows of the range's days, one per day and model. */
function dayParts(range: { from: string; to: string }, groupBy: "day" | "model"): SQL {
  return sql`select json_group_array(json_array(${sql.raw(groupBy)}, model, ${columns(DAY_FIELDS)})) as parts
    from usage_days where day between ${range.from} and ${range.to}`;
}

/**
 * By person: for each person and model used in the range, the totals at its end (the running
 * totals, or the last day's row at or before the end) and, negated, those before its start
 * (the last day's row before it), as parts that add up to the range's sums; the erased
 * accounts' days of the range, as the person ''; and the names of the people. Each lookup of
 * a day's row is one seek (`order by day desc limit 1`), made only where the range cuts a
 * person's days; `ends` is materialized so that the seek for the end is made once.
 */
function personParts(range: { from: string; to: string }): SQL {
  const { from, to } = range;
  const values = (prefix: string, sign = "") => sql.raw(PERSON_FIELDS.map((f) => `${sign}${prefix}.${columnName(f)}`).join(", "));
  const latest = (comparison: SQL, sign = "") =>
    sql`select json_array(c.user_id, c.model, ${values("c", sign)}) from usage_user_cumulative c
      where c.user_id = t.user_id and c.model = t.model and ${comparison} order by c.day desc limit 1`;
  return sql`with ends as materialized (
      select t.user_id, t.model, t.first_day,
        case when t.last_day <= ${to} then json_array(t.user_id, t.model, ${values("t")})
          else (${latest(sql`c.day <= ${to} and c.day >= ${from}`)}) end as part
      from usage_user_totals t
      where t.first_day <= ${to} and t.last_day >= ${from}),
    parts(part) as (
      select part from ends where part is not null
      union all
      select (${latest(sql`c.day < ${from}`, "-")}) from ends t where t.part is not null and t.first_day < ${from}
      union all
      select json_array(${ERASED}, model, ${sql.raw(PERSON_FIELDS.map((f) => `sum(${columnName(f)})`).join(", "))}) from usage_erased_days where day between ${from} and ${to} group by model)
    select '[' || coalesce(group_concat(part, ','), '') || ']' as parts,
      (select json_group_object(id, name) from users where id in (select user_id from ends where part is not null)) as names
    from parts`;
}

/**
 * Thumbs up and down per key on the replies written in the range (messages_rated_idx holds
 * the rated ones by time), as one JSON object: key → [up, down]. A rating has no time of its
 * own: it counts on the day its reply was written, which is the day it was charged.
 */
function ratingsOf(range: { from: string; to: string }, groupBy: GroupBy): SQL {
  const key = sql.raw(groupBy === "model" ? "model" : groupBy === "user" ? "user_id" : "strftime('%Y-%m-%d', created_at / 1000, 'unixepoch')");
  const from = Date.parse(`${range.from}T00:00:00.000Z`);
  const to = Date.parse(`${range.to}T00:00:00.000Z`) + 86_400_000;
  return sql`select json_group_object(key, json_array(up, down)) as ratings from (
    select ${key} as key, sum(rating = 1) as up, sum(rating = -1) as down from messages
    where rating is not null and created_at >= ${from} and created_at < ${to} and role = 'assistant' and status <> 'failed'
    group by 1)`;
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
      ratingsUp: 0,
      ratingsDown: 0,
    }))
    .sort((a, b) => byKey.compare(String(a.key), String(b.key)));
}

/** The order of keys: the locale's, as String.localeCompare's, through one collator (localeCompare makes one per call: 0.1 s for 10,000 people). */
const byKey = new Intl.Collator();

/** The report as CSV (RFC 4180), a header line first. */
export function usageCsv(rows: UsageRow[], groupBy: GroupBy): string {
  const header = [groupBy, "messages", "credits", "inputTokens", "outputTokens", "estimatedTokenRows", "failed", "medianTimeToFirstTokenMs", "cost", "ratingsUp", "ratingsDown"];
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? "" : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const lines = rows.map((r) => [r.key, r.messages, r.credits, r.inputTokens, r.outputTokens, r.estimatedTokenRows, r.failed, r.medianTimeToFirstTokenMs, r.cost, r.ratingsUp, r.ratingsDown].map(cell).join(","));
  return `${[header.join(","), ...lines].join("\r\n")}\r\n`;
}
