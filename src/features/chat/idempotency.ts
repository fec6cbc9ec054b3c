import { and, eq, lte, or, sql, type Placeholder } from "drizzle-orm";
import { firstRow, selectStep, type Db, type Step } from "../../platform/db";
import { idempotencyKeys } from "../../../schema/index";

/** How long a finished reply is replayed for a retry with the same key. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Status of a claim whose exchange is still running. */
const PENDING = 0;

/**
 * One exchange's hold on (user, key). `marker` is the pending row's body, unique to this
 * exchange, so the debit can require that the claim is ours and a release only removes ours.
 */
export interface IdempotencyClaim {
  userId: string;
  key: string;
  fingerprint: string;
  marker: string;
}

export function newClaim(userId: string, key: string, fingerprint: string, exchangeId: string): IdempotencyClaim {
  return { userId, key, fingerprint, marker: JSON.stringify({ pending: exchangeId, fingerprint }) };
}

/**
 * Claims the key: inserts a pending row, or takes over one that has expired (older than
 * the TTL), or one left pending longer than `staleAfterMs` that no credit hold owns (an
 * exchange refused, or from before holds, whose process died before giving it back). A
 * claim whose exchange holds credits is freed only with its hold (holds.ts), so
 * a retry is never charged while the first charge may still be stored.
 */
export function claimStatement(db: Db, claim: IdempotencyClaim, now: Date, staleAfterMs: number) {
  const expired = new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
  const stale = new Date(now.getTime() - staleAfterMs);
  return db
    .insert(idempotencyKeys)
    .values({ userId: claim.userId, key: claim.key, createdAt: now, status: PENDING, body: claim.marker })
    .onConflictDoUpdate({
      target: [idempotencyKeys.userId, idempotencyKeys.key],
      set: { createdAt: now, status: PENDING, body: claim.marker },
      setWhere: or(
        lte(idempotencyKeys.createdAt, expired),
        and(
          eq(idempotencyKeys.status, PENDING),
          lte(idempotencyKeys.createdAt, stale),
          sql`not exists (select 1 from credit_holds h where h.user_id = ${idempotencyKeys.userId} and h.claim_key = ${idempotencyKeys.key})`,
        ),
      ),
    });
}

/** True in SQL while the claim is this exchange's: the debit's guard (values or placeholders). */
export function claimHeldGuard(claim: { [K in "userId" | "key" | "marker"]: string | Placeholder }) {
  return sql`exists (select 1 from idempotency_keys where user_id = ${claim.userId} and key = ${claim.key} and status = ${PENDING} and body = ${claim.marker})`;
}

/** The key's row as the claiming batch leaves it, for claimState. */
export function readClaimStep(db: Db, claim: IdempotencyClaim): Step<{ status: number; body: string } | undefined> {
  const fields = { status: idempotencyKeys.status, body: idempotencyKeys.body };
  return selectStep(
    fields,
    db.select(fields).from(idempotencyKeys).where(and(eq(idempotencyKeys.userId, claim.userId), eq(idempotencyKeys.key, claim.key))),
    firstRow((row) => ({ status: row.status as number, body: row.body as string })),
  );
}

/**
 * Stores the exchange's reply for replays, in the batch that stores the exchange: over
 * its own pending claim, or in its place when the claim was freed meanwhile (its hold
 * was released while the exchange still ran), unless another exchange claimed the key.
 */
export function finishClaimStatement(db: Db, claim: IdempotencyClaim, now: Date, reply: { status: number; body: unknown }) {
  const finished = { status: reply.status, body: JSON.stringify({ fingerprint: claim.fingerprint, body: reply.body }) };
  return db
    .insert(idempotencyKeys)
    .values({ userId: claim.userId, key: claim.key, createdAt: now, ...finished })
    .onConflictDoUpdate({ target: [idempotencyKeys.userId, idempotencyKeys.key], set: finished, setWhere: eq(idempotencyKeys.body, claim.marker) });
}

/** Gives the key back after a failed exchange, so that a retry runs afresh. */
export function releaseClaimStatement(db: Db, claim: IdempotencyClaim) {
  return db
    .delete(idempotencyKeys)
    .where(and(eq(idempotencyKeys.userId, claim.userId), eq(idempotencyKeys.key, claim.key), eq(idempotencyKeys.body, claim.marker)));
}

export type ClaimState =
  | { kind: "ours" }
  | { kind: "in-progress" }
  | { kind: "replay"; status: number; body: unknown }
  | { kind: "mismatch" };

/** What the row read back in the claiming batch says about this request. */
export function claimState(row: { status: number; body: string } | undefined, claim: IdempotencyClaim): ClaimState {
  if (!row || row.body === claim.marker) return { kind: "ours" };
  const stored = JSON.parse(row.body) as { fingerprint: string; body?: unknown };
  if (stored.fingerprint !== claim.fingerprint) return { kind: "mismatch" };
  if (row.status === PENDING) return { kind: "in-progress" };
  return { kind: "replay", status: row.status, body: stored.body };
}
