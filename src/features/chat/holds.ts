import { and, eq, lte, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { Config } from "../../platform/config";
import { bind, perDb, template, type Db, type Step } from "../../platform/db";
import type { Logger } from "../../platform/log";
import { contexts, creditDays, creditHolds, idempotencyKeys, messages, runningReplies } from "../../../schema/index";

// ---------------------------------------------------------------------------------------
// Credit holds. A chat charge is a hold: the row is written by the batch that debits,
// and deleted by the batch that ends the exchange, either storing it (settled) or
// refunding it (released). A hold is a lease: its exchange renews it (`renewed_at`) every
// third of the model timeout while it runs, so a reply may stream for as long as the model
// keeps sending. A process that dies leaves its hold behind, no longer renewed; once its
// last renewal is older than the model timeout plus a margin, no live exchange can still
// own it, and whoever sees it first (the user's next debit, in a process that has not
// looked for the user's dead holds within a renewal interval: opening.ts; the Node
// server's start; the daily job) refunds it to the day it was charged on and frees its
// Idempotency-Key.
// Every statement here is a query-builder statement, so it can join a batch on D1 too.
// ---------------------------------------------------------------------------------------

/**
 * Added to MODEL_TIMEOUT_MS before a hold counts as abandoned: covers the batch that
 * stores a finished reply and the clocks of different nodes disagreeing a little.
 */
export const HOLD_MARGIN_MS = 5_000;

/** How often a running exchange renews its hold: three times within the window that would make it stale. */
export function renewalInterval(config: Pick<Config, "MODEL_TIMEOUT_MS">): number {
  return Math.max(1_000, Math.floor(config.MODEL_TIMEOUT_MS / 3));
}

/** The instant before which a hold not renewed since belongs to an exchange that can no longer end by itself. */
export function staleBefore(config: Pick<Config, "MODEL_TIMEOUT_MS">, now: Date): Date {
  return new Date(now.getTime() - config.MODEL_TIMEOUT_MS - HOLD_MARGIN_MS);
}

type Value<T> = T | Placeholder;

/**
 * The hold of the debit just before it in the same batch: inserted only when that debit
 * charged (`changes()` counts the rows the previous statement wrote), for `price`, the
 * same expression the debit charged.
 */
export function holdStatement(
  db: Db,
  hold: {
    id: Value<string>;
    userId: Value<string>;
    day: Value<string>;
    price: SQL | Value<number>;
    createdAtMs: Value<number>;
    claimKey: Value<string | null>;
    keyId: Value<string | null>;
  },
) {
  return db.insert(creditHolds).select(
    db
      .select({
        id: sql<string>`${hold.id}`.as("id"),
        userId: sql<string>`${hold.userId}`.as("user_id"),
        day: sql<string>`${hold.day}`.as("day"),
        credits: sql<number>`${hold.price}`.as("credits"),
        createdAt: sql<Date>`${hold.createdAtMs}`.as("created_at"),
        renewedAt: sql<Date>`${hold.createdAtMs}`.as("renewed_at"),
        claimKey: sql<string | null>`${hold.claimKey}`.as("claim_key"),
        keyId: sql<string | null>`${hold.keyId}`.as("key_id"),
      })
      .from(sql`(select 1)`)
      .where(sql`changes() > 0`),
  );
}

/** Statements that end one hold, built once per handle (see perDb): templates for the batches, and the renewal prepared. */
const endStatements = perDb((db) => {
  const id = sql.placeholder("holdId");
  const userId = sql.placeholder("userId");
  const day = sql.placeholder("day");
  const credits = sql.placeholder("credits");
  const held = sql`exists (select 1 from credit_holds where id = ${id})`;
  const allowance = sql.placeholder("allowance");
  return {
    // A hold released while its exchange still ran (its renewals failed for longer than the
    // stale window: the database unreachable meanwhile) is charged again as the exchange is
    // stored, if today's credits still cover it. They never go past the allowance: without
    // room, the reply is kept uncharged (the user was charged for it once, and refunded by
    // the release).
    rechargeIfReleased: template(
      db
        .insert(creditDays)
        .select(
          db
            .select({ userId: sql<string>`${userId}`.as("user_id"), day: sql<string>`${day}`.as("day"), used: sql<number>`${credits}`.as("used") })
            .from(sql`(select 1)`)
            .where(sql`not ${held} and ${credits} <= ${allowance}`),
        )
        .onConflictDoUpdate({
          target: [creditDays.userId, creditDays.day],
          set: { used: sql`${creditDays.used} + excluded.used` },
          setWhere: sql`${creditDays.used} + excluded.used <= ${allowance}`,
        }),
    ),
    // The lease: the exchange is alive.
    renew: db.update(creditHolds).set({ renewedAt: sql`${sql.placeholder("at")}` }).where(eq(creditHolds.id, id)).prepare(),
    // Only a hold still there is refunded: one already released was refunded by its releaser.
    refundIfHeld: template(
      db
        .update(creditDays)
        .set({ used: sql`${creditDays.used} - ${credits}` })
        .where(and(eq(creditDays.userId, userId), eq(creditDays.day, day), sql`${creditDays.used} >= ${credits}`, held)),
    ),
    // A fallback that answered for less than the hold: the difference goes back, while the
    // hold is still there (a released hold was refunded whole, and recharged at the price paid).
    refundDifferenceIfHeld: template(
      db
        .update(creditDays)
        .set({ used: sql`max(${creditDays.used} - ${sql.placeholder("difference")}, 0)` })
        .where(and(eq(creditDays.userId, userId), eq(creditDays.day, day), held)),
    ),
    remove: template(db.delete(creditHolds).where(eq(creditHolds.id, id))),
  };
});

export interface HeldCharge {
  holdId: string;
  userId: string;
  day: string;
  credits: number;
  /** The day's allowance when the hold was made: a recharge never goes past it. */
  allowance: number;
}

/** Renews the hold's lease: its exchange is still running. One statement. */
export async function renewHold(db: Db, holdId: string, at: Date): Promise<void> {
  await endStatements(db).renew.run({ holdId, at: at.getTime() });
}

/**
 * For the batch that stores the exchange, which is charged `price` (the answering model's,
 * at most the hold): charge it again if released meanwhile, give back what the hold took
 * beyond the price (first, in this order), and drop the hold (last).
 */
export function settleHoldStatements(db: Db, hold: HeldCharge, price: number = hold.credits): { first: Step[]; last: Step } {
  const prepared = endStatements(db);
  const first = [bind(prepared.rechargeIfReleased, { ...hold, credits: price })];
  if (price < hold.credits) first.push(bind(prepared.refundDifferenceIfHeld, { ...hold, difference: hold.credits - price }));
  return { first, last: bind(prepared.remove, { holdId: hold.holdId }) };
}

/** Refunds the hold if it is still there, then drops it: one batch's statements, in order. */
export function releaseHoldStatements(db: Db, hold: HeldCharge): Step[] {
  const prepared = endStatements(db);
  return [bind(prepared.refundIfHeld, { ...hold }), bind(prepared.remove, { holdId: hold.holdId })];
}

/**
 * Releases every hold last renewed before `before` (of one user, or of all): refunds each to
 * its day, frees the Idempotency-Key its exchange claimed, keeps the reply it was writing in
 * the background (a running reply, its text so far) as a failed message at the end of its
 * context's branch, and deletes the hold. Statements that must run in this order, in one
 * batch: `first`, then `remove`, which returns the released holds.
 */
export function releaseStaleStatements(db: Db, scope: { userId?: Value<string>; before: Value<number> }) {
  const { userId, before } = scope;
  const staleOf = (owner: SQL, extra: SQL) =>
    sql`select 1 from credit_holds h where h.user_id = ${owner} and h.renewed_at <= ${before} and ${extra}`;
  const staleSum = sql`(select coalesce(sum(h.credits), 0) from credit_holds h where h.user_id = credit_days.user_id and h.day = credit_days.day and h.renewed_at <= ${before})`;
  const refund = db
    .update(creditDays)
    .set({ used: sql`max(${creditDays.used} - ${staleSum}, 0)` })
    .where(
      and(
        userId === undefined ? undefined : eq(creditDays.userId, userId),
        sql`exists (${staleOf(sql`credit_days.user_id`, sql`h.day = credit_days.day`)})`,
      ),
    );
  const freeClaims = db
    .delete(idempotencyKeys)
    .where(
      and(
        userId === undefined ? undefined : eq(idempotencyKeys.userId, userId),
        eq(idempotencyKeys.status, 0),
        sql`exists (${staleOf(
          sql`idempotency_keys.user_id`,
          sql`h.claim_key = idempotency_keys.key and json_extract(idempotency_keys.body, '$.pending') = h.id`,
        )})`,
      ),
    );
  const remove = db
    .delete(creditHolds)
    .where(and(userId === undefined ? undefined : eq(creditHolds.userId, userId), lte(creditHolds.renewedAt, sql`${before}`)))
    .returning({ id: creditHolds.id, userId: creditHolds.userId, day: creditHolds.day, credits: creditHolds.credits });
  return { first: [refund, freeClaims, ...abandonedReplyStatements(db, userId, before)] as const, remove };
}

/**
 * A reply in the background whose process died: its hold is stale (or already gone, and
 * the reply not saved for as long). It becomes a failed message with the text saved so
 * far, at the end of its context's branch, and its running row is deleted.
 */
function abandonedReplyStatements(db: Db, userId: Value<string> | undefined, before: Value<number>) {
  const abandoned = (r: SQL) => sql`(${userId === undefined ? sql`1` : sql`${r}.user_id = ${userId}`}) and (
    exists (select 1 from credit_holds h where h.id = ${r}.hold_id and h.renewed_at <= ${before})
    or (not exists (select 1 from credit_holds h where h.id = ${r}.hold_id) and ${r}.updated_at <= ${before}))`;
  const keep = db.insert(messages).select(
    db
      .select({
        id: runningReplies.id,
        contextId: runningReplies.contextId,
        userId: runningReplies.userId,
        role: sql<"assistant">`'assistant'`.as("role"),
        content: runningReplies.text,
        model: runningReplies.model,
        parentId: runningReplies.parentId,
        createdAt: runningReplies.updatedAt,
        status: sql<"failed">`'failed'`.as("status"),
        rating: sql<null>`null`.as("rating"),
      })
      .from(runningReplies)
      .where(abandoned(sql`running_replies`)),
  );
  const lead = db
    .update(contexts)
    .set({
      leafId: sql`(select r.id from running_replies r where r.context_id = "contexts"."id" and ${abandoned(sql`r`)} order by r.started_at desc limit 1)`,
      messageCount: sql`${contexts.messageCount} + (select count(*) from running_replies r where r.context_id = "contexts"."id" and ${abandoned(sql`r`)})`,
    })
    // By primary key: only the contexts of abandoned replies are looked at.
    .where(sql`${contexts.id} in (select r.context_id from running_replies r where ${abandoned(sql`r`)})`);
  const drop = db.delete(runningReplies).where(abandoned(sql`running_replies`));
  return [keep, lead, drop] as const;
}

/**
 * Releases the abandoned holds of all users (the Node server's start, the daily job).
 * One batch. Returns how many were released.
 */
export async function releaseStaleHolds(deps: { db: Db; config: Pick<Config, "MODEL_TIMEOUT_MS">; now: () => Date; log: Logger }): Promise<number> {
  const { first, remove } = releaseStaleStatements(deps.db, { before: staleBefore(deps.config, deps.now()).getTime() });
  const results = await deps.db.batch([...first, remove]);
  const released = results[results.length - 1] as Awaited<typeof remove>;
  if (released.length > 0) {
    deps.log.warn("released abandoned credit holds", {
      count: released.length,
      credits: released.reduce((sum, h) => sum + h.credits, 0),
      holds: released.map((h) => h.id),
    });
  }
  return released.length;
}
