import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../platform/db";
import type { ModelEntry } from "../../platform/models/catalog";

// ---------------------------------------------------------------------------------------
// GET /admin/usage: messages, credits, tokens, failed exchanges, median time to first
// token and the operator's cost, per day, model or person, over a range of UTC days. One
// query over the usage rows of the range (indexed by time), grouped by (key, model) so that
// each model's price applies to its own tokens; titles count as the operator's tokens and
// cost, not as messages. The medians come from a second query over the same range, run
// beside it, and the replies' thumbs up and down from a third (the usage rows of the range,
// joined to the replies they paid for).
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
  medianTimeToFirstTokenMs: number | null;
  /** What the catalog's prices make of the tokens; null where no model of the group has a price. */
  cost: number | null;
  /** Replies paid for in the range that their person rated thumbs up, and thumbs down (PUT …/rating). */
  ratingsUp: number;
  ratingsDown: number;
}

function keyOf(groupBy: GroupBy): SQL {
  if (groupBy === "model") return sql`model`;
  if (groupBy === "user") return sql`user_id`;
  return sql`strftime('%Y-%m-%d', at / 1000, 'unixepoch')`;
}

/** The report for [from, to) (ms), grouped by `groupBy`; prices from the catalog's entries. */
export async function usageReport(db: Db, range: { from: number; to: number }, groupBy: GroupBy, prices: ReadonlyMap<string, Pick<ModelEntry, "inputPricePerMillion" | "outputPricePerMillion">>): Promise<UsageRow[]> {
  const key = keyOf(groupBy);
  // Reads side by side: drizzle's D1 driver cannot batch raw statements with parameters.
  const [sums, firsts, ratings, names] = await Promise.all([
    db.all<{ key: string | null; model: string; messages: number; credits: number; input: number; output: number; estimated: number; failed: number }>(sql`
      select ${key} as key, model,
        sum(kind = 'message' and outcome = 'ok') as messages, sum(credits) as credits,
        coalesce(sum(input_tokens), 0) as input, coalesce(sum(output_tokens), 0) as output,
        sum(coalesce(tokens_estimated, 0)) as estimated, sum(outcome = 'failed') as failed
      from usage_events where at >= ${range.from} and at < ${range.to}
      group by 1, 2`),
    db.all<{ key: string | null; ms: number }>(sql`
      select ${key} as key, first_token_ms as ms from usage_events
      where at >= ${range.from} and at < ${range.to} and first_token_ms is not null
      order by 1, 2`),
    ratingsOf(db, range, key),
    groupBy === "user" ? namesOfUsers(db, range) : undefined,
  ]);
  const rows = new Map<string | null, UsageRow>();
  for (const r of sums) {
    const row = rows.get(r.key) ?? { key: r.key, messages: 0, credits: 0, inputTokens: 0, outputTokens: 0, estimatedTokenRows: 0, failed: 0, medianTimeToFirstTokenMs: null, cost: null, ratingsUp: 0, ratingsDown: 0 };
    row.messages += Number(r.messages);
    row.credits += Number(r.credits);
    row.inputTokens += Number(r.input);
    row.outputTokens += Number(r.output);
    row.estimatedTokenRows += Number(r.estimated);
    row.failed += Number(r.failed);
    const price = prices.get(r.model);
    if (price && (price.inputPricePerMillion !== undefined || price.outputPricePerMillion !== undefined)) {
      const cost = (Number(r.input) * (price.inputPricePerMillion ?? 0) + Number(r.output) * (price.outputPricePerMillion ?? 0)) / 1_000_000;
      row.cost = (row.cost ?? 0) + cost;
    }
    rows.set(r.key, row);
  }
  const byKey = new Map<string | null, number[]>();
  for (const f of firsts) byKey.set(f.key, [...(byKey.get(f.key) ?? []), Number(f.ms)]);
  for (const [k, list] of byKey) {
    const row = rows.get(k);
    if (row) row.medianTimeToFirstTokenMs = list[Math.floor((list.length - 1) / 2)]!;
  }
  for (const r of ratings) {
    const row = rows.get(r.key);
    if (!row) continue;
    row.ratingsUp = Number(r.up);
    row.ratingsDown = Number(r.down);
  }
  return [...rows.values()]
    .map((r) => ({ ...r, ...(names ? { name: (r.key && names.get(r.key)) ?? null } : {}), cost: r.cost === null ? null : Math.round(r.cost * 1e6) / 1e6 }))
    .sort((a, b) => String(a.key).localeCompare(String(b.key)));
}

/** The names of the accounts with usage rows in the range: the report by person shows who, not only an id. */
async function namesOfUsers(db: Db, range: { from: number; to: number }): Promise<Map<string, string>> {
  const rows = await db.all<{ id: string; name: string }>(sql`
    select id, name from users
    where id in (select distinct user_id from usage_events where at >= ${range.from} and at < ${range.to} and user_id is not null)`);
  return new Map(rows.map((r) => [r.id, r.name]));
}

/**
 * Thumbs up and down per key, on the replies the range's message rows paid for (each reply
 * once, whatever rows name it). A rating has no time of its own: it counts on the day its
 * reply was charged.
 */
function ratingsOf(db: Db, range: { from: number; to: number }, key: SQL) {
  return db.all<{ key: string | null; up: number; down: number }>(sql`
    select key, sum(rating = 1) as up, sum(rating = -1) as down from (
      select distinct paid.key, messages.id, messages.rating
      from (select ${key} as key, message_id from usage_events
            where at >= ${range.from} and at < ${range.to} and kind = 'message' and message_id is not null) as paid
      join messages on messages.id = paid.message_id
      where messages.rating is not null
    ) group by key`);
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
