import { and, eq, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { Db } from "../../platform/db";
import { creditDays, users } from "../../../schema/index";
import type { Plans } from "../../platform/plans";

const DAY_MS = 86_400_000;

/**
 * The credit_days "day" of the credits an admin granted: it never ends, its `used` counts up
 * to `users.granted_credits`, and it is debited, held and refunded exactly as a day is.
 * Spent only once the day's allowance does not cover a message.
 */
export const GRANT_DAY = "grant";

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

/** GET /credits: the day's credits under the account's plan, the granted credits left, and the plan. */
export interface AccountCredits extends Credits {
  granted: number;
  plan: { id: string; name: string };
}

/** The caller's credits for the day of `now`, their granted balance and their plan. One round trip. */
export async function getCredits(db: Db, userId: string, now: Date, plans: Plans): Promise<AccountCredits> {
  const day = utcDay(now);
  const [[row], [account]] = await db.batch([
    db.select({ used: creditDays.used }).from(creditDays).where(and(eq(creditDays.userId, userId), eq(creditDays.day, day))),
    db
      .select({
        planId: users.planId,
        granted: sql<number>`${users.grantedCredits} - coalesce((select g.used from credit_days g where g.user_id = users.id and g.day = ${GRANT_DAY}), 0)`,
      })
      .from(users)
      .where(eq(users.id, userId)),
  ]);
  const plan = plans.of(account?.planId);
  return { ...creditsFor(day, row?.used ?? 0, plan.dailyCredits), granted: Math.max(0, Number(account?.granted ?? 0)), plan: { id: plan.id, name: plan.name } };
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
  debit: {
    userId: string | Placeholder;
    day: string | Placeholder;
    price: number | SQL | Placeholder;
    allowance: number | SQL | Placeholder;
    guards?: SQL[];
    /** A guard checked before the price, the allowance and the others: one that is cheap and usually false. */
    first?: SQL;
  },
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
        // `first` stands in the price's own select: when it fails, the price (a subquery for
        // the default model) is never computed, nor anything after it.
        .from(debit.first ? sql`(select ${debit.price} as price where ${debit.first}) as charge` : sql`(select ${debit.price} as price) as charge`)
        .where(and(sql`${charge} is not null`, sql`${charge} <= ${debit.allowance}`, ...(debit.guards ?? []))),
    )
    .onConflictDoUpdate({
      target: [creditDays.userId, creditDays.day],
      set: { used: sql`${creditDays.used} + excluded.used` },
      setWhere: sql`${creditDays.used} + excluded.used <= ${debit.allowance}`,
    })
    .returning({ used: creditDays.used });
}
