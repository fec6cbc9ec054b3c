import { and, eq, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { Db } from "../../platform/db";
import { creditDays } from "../../../schema/index";

const DAY_MS = 86_400_000;

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** 00:00 UTC of the day after `at`: when that day's credits are back. */
export function nextUtcMidnight(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
}

/** The UTC day `days` days before `at`'s day (0: the same day). */
export function utcDayBefore(at: Date, days: number): string {
  return utcDay(new Date(at.getTime() - days * DAY_MS));
}

/** A day's credits as the API shows them. */
export interface Credits {
  allowance: number;
  used: number;
  remaining: number;
  resetAt: string;
  day: string;
}

export function creditsFor(day: string, used: number, allowance: number): Credits {
  return {
    allowance,
    used,
    remaining: Math.max(0, allowance - used),
    resetAt: nextUtcMidnight(new Date(`${day}T00:00:00.000Z`)).toISOString(),
    day,
  };
}

/** Whole seconds from `now` until `resetAt`, at least 1 (for Retry-After). */
export function secondsUntil(resetAt: string, now: Date): number {
  return Math.max(1, Math.ceil((Date.parse(resetAt) - now.getTime()) / 1000));
}

/** "11 h 58 min", "3 min": how long until credits return, for messages. */
export function describeWait(seconds: number): string {
  const minutes = Math.ceil(seconds / 60);
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return h > 0 ? `${h} h ${m} min` : `${m} min`;
}

/** The caller's credits for the day of `now`. One read. */
export async function getCredits(db: Db, userId: string, now: Date, allowance: number): Promise<Credits> {
  const day = utcDay(now);
  const [row] = await db
    .select({ used: creditDays.used })
    .from(creditDays)
    .where(and(eq(creditDays.userId, userId), eq(creditDays.day, day)));
  return creditsFor(day, row?.used ?? 0, allowance);
}

/**
 * The debit: one conditional statement that charges `price` to the user's row for `day`
 * only if the day's total stays within the allowance and every guard holds. Concurrent
 * debits serialize on the row in the database, so no number of nodes can overspend.
 * Returns `[{ used }]` (the new total) when charged, no row when refused. `price` may be
 * an SQL expression; NULL refuses. Any value may be a placeholder, for a prepared debit.
 */
export function debitStatement(
  db: Db,
  debit: { userId: string | Placeholder; day: string | Placeholder; price: number | SQL | Placeholder; allowance: number | Placeholder; guards?: SQL[] },
) {
  // Built with the query builder, not db.all(sql`…`): drizzle's D1 driver cannot put a raw
  // statement with parameters in a batch. INSERT … SELECT needs its WHERE before
  // ON CONFLICT (SQLite would read ON as a join), which it always has here.
  const charge = sql`charge.price`;
  return db
    .insert(creditDays)
    .select(
      db
        .select({
          userId: sql<string>`${debit.userId}`.as("user_id"),
          day: sql<string>`${debit.day}`.as("day"),
          used: sql<number>`${charge}`.as("used"),
        })
        .from(sql`(select ${debit.price} as price) as charge`)
        .where(and(sql`${charge} is not null`, sql`${charge} <= ${debit.allowance}`, ...(debit.guards ?? []))),
    )
    .onConflictDoUpdate({
      target: [creditDays.userId, creditDays.day],
      set: { used: sql`${creditDays.used} + excluded.used` },
      setWhere: sql`${creditDays.used} + excluded.used <= ${debit.allowance}`,
    })
    .returning({ used: creditDays.used });
}
