import { and, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import { FIRST_TOKEN_BUCKETS, usageDays, usageErasedDays, usageUserCumulative, usageUserTotals } from "../../../schema/index";
import { bind, perDb, template, type Db, type Step, type Template } from "../../platform/db";
import { utcDay } from "./credits";
import { firstTokenBucket, firstTokenLog2 } from "./first-token-histogram";

// ---------------------------------------------------------------------------------------
// The usage rollups (schema/usage-rollups.ts), kept in step with usage_events by the batch
// that writes each usage row (usage.ts usageStatements): the call's numbers are added to its
// day and model, to its person's running totals for the model, and to the person's totals
// at the end of its day (and of any later day already written: a call that began before
// midnight is stored after it). An erasure turns the person's totals back into each day's
// sums, adds them to the erased accounts' days, and deletes the person's rows.
// ---------------------------------------------------------------------------------------

/** How many UTC days of rollups are kept (the daily job deletes older ones): GET /admin/usage reaches back this far. */
export const USAGE_ROLLUP_DAYS = 730;

/** The sums the report shows, which every rollup keeps. */
export const REPORT_FIELDS = ["messages", "credits", "inputTokens", "outputTokens", "estimatedRows", "failed"] as const;
/** The rollup by day and model: the report's sums and the time to first token's histogram. */
export const DAY_FIELDS = [...REPORT_FIELDS, ...Array.from({ length: FIRST_TOKEN_BUCKETS }, (_, k) => `firstTokens${k}` as const)];
/** The rollups by person: the report's sums, and the count and log2 sum of the times to first token. */
export const PERSON_FIELDS = [...REPORT_FIELDS, "firstTokens", "firstTokenLog2Sum"] as const;

/** A column's name in the database (the schema's casing is snake_case). */
export const columnName = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

type Rollup = typeof usageDays | typeof usageUserTotals | typeof usageUserCumulative | typeof usageErasedDays;
const columnsOf = (table: Rollup) => table as unknown as Record<string, SQLiteColumn>;
const names = (fields: readonly string[], prefix = "") =>
  sql.raw(fields.map((f) => `${prefix}${columnName(f)}`).join(", "));

/** `set` of an upsert that adds the new row's sums to the existing row's. */
function adding(table: Rollup, fields: readonly string[]): Record<string, SQL> {
  return Object.fromEntries(fields.map((f) => [f, sql`${columnsOf(table)[f]} + ${sql.raw(`excluded.${columnName(f)}`)}`]));
}

/** The call's numbers as values: placeholders named as the fields; a histogram's buckets from the placeholder `bucket` (-1 for no time). */
function callValues(fields: readonly string[]): Record<string, SQL | ReturnType<typeof sql.placeholder>> {
  return Object.fromEntries(
    fields.map((f) => {
      const bucket = /^firstTokens(\d+)$/.exec(f)?.[1];
      return [f, bucket === undefined ? sql.placeholder(f) : sql`(${sql.placeholder("bucket")} = ${sql.raw(bucket)})`];
    }),
  );
}

const rollupTemplates = perDb((db): Template[] => {
  const userId = sql.placeholder("userId");
  const model = sql.placeholder("model");
  const day = sql.placeholder("day");
  const ofPair = (table: typeof usageUserCumulative | typeof usageUserTotals) => and(eq(table.userId, userId), eq(table.model, model));
  const laterDayWritten = sql`${day} < (select t.last_day from usage_user_totals t where t.user_id = ${userId} and t.model = ${model})`;
  return [
    // The day and model's row.
    template(
      db
        .insert(usageDays)
        .values({ day, model, ...callValues(DAY_FIELDS) } as SQLiteInsertValue<typeof usageDays>)
        .onConflictDoUpdate({ target: [usageDays.day, usageDays.model], set: adding(usageDays, DAY_FIELDS) as never }),
    ),
    // The person's running totals for the model.
    template(
      db
        .insert(usageUserTotals)
        .values({ userId, model, firstDay: day, lastDay: day, ...callValues(PERSON_FIELDS) } as SQLiteInsertValue<typeof usageUserTotals>)
        .onConflictDoUpdate({
          target: [usageUserTotals.userId, usageUserTotals.model],
          set: { ...adding(usageUserTotals, PERSON_FIELDS), firstDay: sql`min(first_day, excluded.first_day)`, lastDay: sql`max(last_day, excluded.last_day)` } as never,
        }),
    ),
    // The call's day is the last the person used the model on (as nearly always): its row is the totals.
    template(
      db
        .insert(usageUserCumulative)
        .select(sql`select user_id, model, last_day, ${names(PERSON_FIELDS)} from usage_user_totals where user_id = ${userId} and model = ${model} and last_day = ${day}`)
        .onConflictDoUpdate({
          target: [usageUserCumulative.userId, usageUserCumulative.model, usageUserCumulative.day],
          set: Object.fromEntries(PERSON_FIELDS.map((f) => [f, sql.raw(`excluded.${columnName(f)}`)])) as never,
        }),
    ),
    // A later day was written already: the call's day gets a row as the day before it stood (if it has none)…
    template(
      db
        .insert(usageUserCumulative)
        .select(
          sql`select ${userId}, ${model}, ${day}, ${sql.raw(PERSON_FIELDS.map((f) => `coalesce(p.${columnName(f)}, 0)`).join(", "))}
            from (select 1) left join usage_user_cumulative p on p.user_id = ${userId} and p.model = ${model}
              and p.day = (select max(c.day) from usage_user_cumulative c where c.user_id = ${userId} and c.model = ${model} and c.day < ${day})
            where ${laterDayWritten}`,
        )
        .onConflictDoNothing(),
    ),
    // …and it and every later day get the call added.
    template(
      db
        .update(usageUserCumulative)
        .set(Object.fromEntries(PERSON_FIELDS.map((f) => [f, sql`${columnsOf(usageUserCumulative)[f]} + ${sql.placeholder(f)}`])) as never)
        .where(and(ofPair(usageUserCumulative), gte(usageUserCumulative.day, day), laterDayWritten)),
    ),
  ];
});

/** What one usage row adds to the rollups. */
export interface RolledUp {
  userId: string | null;
  at: Date;
  model: string;
  kind: "message" | "title";
  outcome: "ok" | "failed";
  credits: number;
  inputTokens: number;
  outputTokens: number;
  tokensEstimated: boolean;
  firstTokenMs: number | null;
}

/**
 * How far another server's clock may run ahead of this one's: a call stored this long before
 * the end of the day it began on may find a later day written already (by a call that began
 * after midnight on that server's clock).
 */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The statements that add a usage row to the rollups, for the batch that writes it at
 * `storedAt`. A row of nobody's (no account) adds to the days only. The two that add a call
 * to a day before the person's last are left out when it is stored well inside the day it
 * began on (nearly always): no later day can have been written yet.
 */
export function rollupStatements(db: Db, event: RolledUp, storedAt: Date): Step[] {
  const timed = event.firstTokenMs !== null;
  const values = {
    day: utcDay(event.at),
    userId: event.userId,
    model: event.model,
    messages: event.kind === "message" && event.outcome === "ok" ? 1 : 0,
    credits: event.credits,
    inputTokens: event.inputTokens,
    outputTokens: event.outputTokens,
    estimatedRows: event.tokensEstimated ? 1 : 0,
    failed: event.outcome === "failed" ? 1 : 0,
    bucket: timed ? firstTokenBucket(event.firstTokenMs!) : -1,
    firstTokens: timed ? 1 : 0,
    firstTokenLog2Sum: timed ? firstTokenLog2(event.firstTokenMs!) : 0,
  };
  const [days, totals, lastDay, ...laterDays] = rollupTemplates(db);
  const maybeLater = utcDay(new Date(storedAt.getTime() + CLOCK_SKEW_MS)) !== values.day;
  const person = event.userId === null ? [] : [totals!, lastDay!, ...(maybeLater ? laterDays : [])];
  return [days!, ...person].map((t) => bind(t, values));
}

/**
 * An erased account's usage by person: each day's sums (the day's totals less the day's
 * before) added to the erased accounts' days, then the person's rows deleted. For the
 * erasure's batch: nothing left points at the person.
 */
export function eraseFromRollups(db: Db, userId: string) {
  const daily = PERSON_FIELDS.map((f) => {
    const c = columnName(f);
    return `${c} - coalesce(lag(${c}) over (partition by model order by day), 0)`;
  }).join(", ");
  return [
    // Its WHERE comes before ON CONFLICT, where SQLite needs one (it would read ON as a join).
    db
      .insert(usageErasedDays)
      .select(sql`select day, model, ${sql.raw(daily)} from usage_user_cumulative where user_id = ${userId}`)
      .onConflictDoUpdate({ target: [usageErasedDays.day, usageErasedDays.model], set: adding(usageErasedDays, PERSON_FIELDS) as never }),
    db.delete(usageUserCumulative).where(eq(usageUserCumulative.userId, userId)),
    db.delete(usageUserTotals).where(eq(usageUserTotals.userId, userId)),
  ];
}

/**
 * The daily job's deletes of rollup rows before `firstKept` (a day): the days' rows, and a
 * person's totals at the end of a day, but for the last such day of each person and model,
 * from which a range starting later is still counted.
 */
export function pruneRollupStatements(db: Db, firstKept: string) {
  return [
    db.delete(usageDays).where(lt(usageDays.day, firstKept)).returning({ day: usageDays.day }),
    db.delete(usageErasedDays).where(lt(usageErasedDays.day, firstKept)).returning({ day: usageErasedDays.day }),
    db
      .delete(usageUserCumulative)
      .where(
        and(
          lt(usageUserCumulative.day, firstKept),
          sql`exists (select 1 from usage_user_cumulative c where c.user_id = ${usageUserCumulative.userId} and c.model = ${usageUserCumulative.model}
            and c.day > ${usageUserCumulative.day} and c.day < ${firstKept})`,
        ),
      )
      .returning({ day: usageUserCumulative.day }),
  ];
}
