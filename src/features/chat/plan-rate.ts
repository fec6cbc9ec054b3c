import { and, eq, lt, sql, type SQL } from "drizzle-orm";
import { chatMinutes } from "../../../schema/index";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import type { Plan, Plans } from "../../platform/plans";
import { callerPlan } from "./entitlements";

// ---------------------------------------------------------------------------------------
// A plan's requestsPerMinute: the model calls (chat messages, regenerations, edits, /v1
// completions) an account may ask for in one UTC minute. Counted in the database, by the
// opening batch (opening.ts): it deletes the account's earlier minutes, counts this call in
// the account's row for the minute, and the debit then charges only while the count is
// within the plan's limit. One transaction, no extra round trip, and exact across
// processes, restarts and Workers isolates. A refused call still counts (a client that keeps
// trying does not get further), and nothing is charged for it.
// ---------------------------------------------------------------------------------------

const MINUTE_MS = 60_000;

/** The UTC minute of an instant, as chat_minutes keeps it. */
export const minuteOf = (at: Date): number => Math.floor(at.getTime() / MINUTE_MS);

/** Whether any plan limits its model calls a minute: where none does, nothing is counted. */
export const plansLimitCalls = (plans: Plans): boolean => plans.list.some((p) => p.requestsPerMinute !== null);

/**
 * The statements that count a call, with placeholders `userId` and `minute` (and the plans'
 * of entitlementValues): the account's earlier minutes deleted, then this minute's count
 * raised by one, for an account whose plan has a limit.
 */
export function countCallStatements(db: Db) {
  const userId = sql.placeholder("userId");
  const minute = sql.placeholder("minute");
  // Its WHERE comes before ON CONFLICT, where SQLite needs one (it would read ON as a join).
  const counted = sql`select u.id, ${minute}, 1 ${callerPlan()} and json_extract(pl.value, '$.rpm') is not null`;
  return [
    db.delete(chatMinutes).where(and(eq(chatMinutes.userId, userId), lt(chatMinutes.minute, minute))),
    db
      .insert(chatMinutes)
      .select(counted)
      .onConflictDoUpdate({ target: [chatMinutes.userId, chatMinutes.minute], set: { count: sql`${chatMinutes.count} + 1` } }),
  ];
}

/** The debit's guard: the account's count for the minute (this call's included) is within its plan's limit, or the plan has none. */
export function withinPlanRate(): SQL {
  return sql`not exists (select 1 from chat_minutes c where c.user_id = ${sql.placeholder("userId")} and c.minute = ${sql.placeholder("minute")}
    and c.count > (select json_extract(pl.value, '$.rpm') ${callerPlan()}))`;
}

/** The account's calls this minute, in a select from users (the opening's read of the account); null: none counted. */
export function callsThisMinute(): SQL<number | null> {
  return sql<number | null>`(select c.count from chat_minutes c where c.user_id = users.id and c.minute = ${sql.placeholder("minute")})`;
}

/** 429 plan_rate_limit when `calls` (this one included) is past the plan's limit; undefined otherwise. */
export function planRateRefusal(plan: Plan, calls: number, at: Date): DomainError | undefined {
  const limit = plan.requestsPerMinute;
  if (limit === null || calls <= limit) return undefined;
  const wait = Math.max(1, Math.ceil(((minuteOf(at) + 1) * MINUTE_MS - at.getTime()) / 1000));
  return new DomainError(
    "plan_rate_limit",
    `too many messages: your plan (${plan.name}) allows ${limit} model calls a minute; retry in ${wait} s (nothing was charged)`,
    { retryAfterSeconds: wait },
  );
}
