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
// titles count as the operator's tokens and cost, not as messages. The ratings come from the
// rated replies of the range (indexes of their own): by person within the same statement, by
// day or model from a second one beside it.
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

/** The report for the UTC days `from` … `to` (both included), grouped by `groupBy`; prices from the catalog's entries. */
export async function usageReport(db: Db, range: { from: string; to: string }, groupBy: GroupBy, prices: Prices): Promise<UsageRow[]> {
  if (range.from > range.to) return [];
  const rows = groupBy === "user" ? await personReport(db, range, prices) : await dayReport(db, range, groupBy, prices);
  // The erased accounts' row (key null) sorts as "null", as it always has.
  return rows.sort((a, b) => byKey.compare(a.key ?? "null", b.key ?? "null"));
}

/** The order of keys: the locale's, as String.localeCompare's, through one collator (localeCompare makes one per call: 0.1 s for 10,000 people). */
const byKey = new Intl.Collator();

const columns = (fields: readonly string[]) => sql.raw(fields.map(columnName).join(", "));

/** A report row from its key, its sums (REPORT_FIELDS' order), its median, its cost and its thumbs up and down. */
function row(key: string | null, sums: readonly number[], median: number | null, cost: number | null, [ratingsUp, ratingsDown] = [0, 0]): UsageRow {
  const [messages = 0, credits = 0, inputTokens = 0, outputTokens = 0, estimatedTokenRows = 0, failed = 0] = sums;
  const rounded = cost === null ? null : Math.round(cost * 1e6) / 1e6;
  return { key, messages, credits, inputTokens, outputTokens, estimatedTokenRows, failed, medianTimeToFirstTokenMs: median, cost: rounded, ratingsUp, ratingsDown };
}

/**
 * By day or model: the rows of the range's days, one per day and model (`[key, model, ...DAY_FIELDS]`),
 * summed per key in JavaScript, each priced by its model; the medians off the summed histograms.
 */
async function dayReport(db: Db, range: { from: string; to: string }, groupBy: "day" | "model", prices: Prices): Promise<UsageRow[]> {
  // Side by side: drizzle's D1 driver cannot batch raw statements with parameters.
  const [result, rated] = await Promise.all([
    db.get<{ parts: string | null }>(sql`select json_group_array(json_array(${sql.raw(groupBy)}, model, ${columns(DAY_FIELDS)})) as parts
      from usage_days where day between ${range.from} and ${range.to}`),
    db.get<{ ratings: string | null }>(sql`select json_group_object(key, json_array(up, down)) as ratings from (${ratingsOf(range, groupBy)})`),
  ]);
  const ratings = JSON.parse(rated?.ratings ?? "{}") as Record<string, [number, number]>;
  const totals = new Map<string, { sums: number[]; cost: number | null }>();
  for (const [key, model, ...values] of JSON.parse(result?.parts ?? "[]") as Array<[string, string, ...number[]]>) {
    const acc = totals.get(key) ?? { sums: values.map(() => 0), cost: null };
    for (let i = 0; i < values.length; i++) acc.sums[i]! += values[i]!;
    const price = prices.get(model);
    if (price && (price.inputPricePerMillion !== undefined || price.outputPricePerMillion !== undefined)) {
      acc.cost = (acc.cost ?? 0) + (values[2]! * (price.inputPricePerMillion ?? 0) + values[3]! * (price.outputPricePerMillion ?? 0)) / 1_000_000;
    }
    totals.set(key, acc);
  }
  const n = REPORT_FIELDS.length;
  return [...totals].map(([key, { sums, cost }]) => row(key, sums, medianOf(sums.slice(n)), cost, ratings[key]));
}

/**
 * By person, summed and priced in the statement, one row each, `[id, name, cost, ...PERSON_FIELDS]`:
 * for each person and model used in the range, the totals at its end (the running totals, or
 * the last day's row at or before the end) less those before its start (the last day's row
 * before it), each row looked up only where the range cuts the person's days; and the erased
 * accounts' days of the range, as the person ''. Prices go in as a JSON parameter, so that
 * the statement hands back 10,000 people rather than their 30,000 models.
 */
async function personReport(db: Db, range: { from: string; to: string }, prices: Prices): Promise<UsageRow[]> {
  const { from, to } = range;
  const priced = Object.fromEntries([...prices].filter(([, p]) => p.inputPricePerMillion !== undefined || p.outputPricePerMillion !== undefined).map(([id, p]) => [id, [p.inputPricePerMillion ?? 0, p.outputPricePerMillion ?? 0]]));
  const atEnd = (f: string) => `coalesce(a.${columnName(f)}, t.${columnName(f)}) - coalesce(b.${columnName(f)}, 0)`;
  // The last row of the person and model at or before a day; only looked for where it is needed.
  const latest = (when: SQL, comparison: SQL) =>
    sql`case when ${when} then (select max(c.day) from usage_user_cumulative c where c.user_id = t.user_id and c.model = t.model and ${comparison}) end`;
  const sums = sql.raw(PERSON_FIELDS.map((f) => `sum(${columnName(f)})`).join(", "));
  const cost = sql.raw("case when count(p.model) > 0 then sum(input_tokens * p.input + output_tokens * p.output) / 1000000.0 end");
  const result = await db.get<{ rows: string | null }>(sql`with
    prices(model, input, output) as (select key, value ->> 0, value ->> 1 from json_each(${JSON.stringify(priced)})),
    cut(user_id, model, ${columns(PERSON_FIELDS)}) as (
      select t.user_id, t.model, ${sql.raw(PERSON_FIELDS.map(atEnd).join(", "))}
      from usage_user_totals t
        left join usage_user_cumulative a on a.user_id = t.user_id and a.model = t.model and a.day = ${latest(sql`t.last_day > ${to}`, sql`c.day <= ${to}`)}
        left join usage_user_cumulative b on b.user_id = t.user_id and b.model = t.model and b.day = ${latest(sql`t.first_day < ${from}`, sql`c.day < ${from}`)}
      where t.first_day <= ${to} and t.last_day >= ${from} and (t.last_day <= ${to} or a.day >= ${from})),
    people(user_id, cost, ${columns(PERSON_FIELDS)}) as (
      select user_id, ${cost}, ${sums} from cut left join prices p using (model) group by user_id
      union all
      select ${ERASED}, ${cost}, ${sums} from usage_erased_days left join prices p using (model) where day between ${from} and ${to} having count(*) > 0)
    select json_group_array(json_array(g.user_id, (select u.name from users u where u.id = g.user_id), g.cost, json((${personRatings(range)})), ${columns(PERSON_FIELDS)})) as rows
    from people g`);
  const n = REPORT_FIELDS.length;
  type Person = [string, string | null, number | null, [number | null, number | null], ...number[]];
  return (JSON.parse(result?.rows ?? "[]") as Person[]).map(([id, name, cost, [up, down], ...values]) => {
    const erased = id === ERASED;
    const person = row(erased ? null : id, values, geometricMeanOf(values[n]!, values[n + 1]!), cost, [up ?? 0, down ?? 0]);
    person.name = erased ? null : name;
    return person;
  });
}

/** The UTC day range's bounds in ms: the rated replies' `created_at`. */
function writtenBetween(range: { from: string; to: string }) {
  return { from: Date.parse(`${range.from}T00:00:00.000Z`), to: Date.parse(`${range.to}T00:00:00.000Z`) + DAY_MS };
}
const DAY_MS = 86_400_000;

/**
 * Thumbs up and down per day or model (`key`, `up`, `down`) on the replies written in the
 * range, read off messages_rated_idx alone (the rated ones by time, with what is counted of
 * them). A rating has no time of its own: it counts on the day its reply was written, which
 * is the day it was charged. Only replies are rated (contexts.ts rateReply); a failed one was
 * not charged. Days are grouped by number and named once each (strftime for every reply took
 * twice as long).
 */
function ratingsOf(range: { from: string; to: string }, groupBy: "day" | "model"): SQL {
  const { from, to } = writtenBetween(range);
  const [key, group] = groupBy === "model" ? ["model", "model"] : [`strftime('%Y-%m-%d', created_at / ${DAY_MS} * 86400, 'unixepoch')`, `created_at / ${DAY_MS}`];
  return sql`select ${sql.raw(key)} as key, sum(rating = 1) as up, sum(rating = -1) as down from messages
    where rating is not null and created_at >= ${from} and created_at < ${to} and status <> 'failed' group by ${sql.raw(group)}`;
}

/**
 * One person's thumbs up and down (`[up, down]`, nulls for none) in the range, for the report
 * by person's statement: a seek into messages_rated_user_idx each (grouping every rated reply
 * of the range by person took five times as long).
 */
function personRatings(range: { from: string; to: string }): SQL {
  const { from, to } = writtenBetween(range);
  return sql`select json_array(sum(m.rating = 1), sum(m.rating = -1)) from messages m
    where m.user_id = g.user_id and m.rating is not null and m.created_at >= ${from} and m.created_at < ${to} and m.status <> 'failed'`;
}

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
