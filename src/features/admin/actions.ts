import { eq, sql } from "drizzle-orm";
import type { Db } from "../../platform/db";
import type { EndedSessions } from "../../platform/auth/ended-sessions";
import type { SuspendedAccounts } from "../../platform/auth/suspended-accounts";
import { DomainError } from "../../platform/errors";
import { excerpt } from "../../platform/errors";
import type { Plans } from "../../platform/plans";
import { sessions, users } from "../../../schema/index";
import { endSessionStatements } from "../sign-in/sessions";
import { auditStatement, userExists } from "./audit";
import { eraseAccount, type ErasureDeps } from "../account/erasure";

// ---------------------------------------------------------------------------------------
// What an admin does to an account, each in one batch with its audit record: suspend (the
// sessions end; tokens, keys and sign-ins are refused), lift it, grant credits, change the
// plan. An unknown account is 404 user_not_found and leaves no record.
// ---------------------------------------------------------------------------------------

export interface AdminDeps {
  db: Db;
  endedSessions: EndedSessions;
  suspendedAccounts: SuspendedAccounts;
  now: () => Date;
}

export function userNotFound(id: string): DomainError {
  return new DomainError("user_not_found", /^usr_[A-Za-z0-9_-]{1,40}$/.test(id) ? `no account ${id}` : `no account '${excerpt(id)}'; use an id GET /admin/users lists`);
}

/** Suspends the account: its sessions end, and its tokens, keys and sign-ins are refused from now on. */
export async function suspendUser(deps: AdminDeps, actorId: string, userId: string, reason: string): Promise<void> {
  const { db } = deps;
  const now = deps.now();
  const [ended, , updated] = await db.batch([
    ...endSessionStatements(db, eq(sessions.userId, userId), "suspended", now),
    db.update(users).set({ suspendedAt: now, suspendedReason: reason }).where(eq(users.id, userId)).returning({ id: users.id }),
    auditStatement(db, { actorId, action: "user.suspend", targetId: userId, details: { reason }, at: now }, userExists(userId)),
  ]);
  if (updated.length === 0) throw userNotFound(userId);
  deps.endedSessions.note(ended);
  deps.suspendedAccounts.note(userId, { reason });
}

/** Lifts a suspension: the person signs in again (the sessions that ended stay ended). */
export async function unsuspendUser(deps: AdminDeps, actorId: string, userId: string): Promise<void> {
  const { db } = deps;
  const now = deps.now();
  const [updated] = await db.batch([
    db.update(users).set({ suspendedAt: null, suspendedReason: null }).where(eq(users.id, userId)).returning({ id: users.id }),
    auditStatement(db, { actorId, action: "user.unsuspend", targetId: userId, details: {}, at: now }, userExists(userId)),
  ]);
  if (updated.length === 0) throw userNotFound(userId);
  deps.suspendedAccounts.note(userId, undefined);
}

/** Grants credits that never reset, spent after the day's allowance. */
export async function grantCredits(deps: AdminDeps, actorId: string, userId: string, amount: number, note: string | null): Promise<void> {
  const { db } = deps;
  const now = deps.now();
  const [updated] = await db.batch([
    db
      .update(users)
      .set({ grantedCredits: sql`${users.grantedCredits} + ${amount}` })
      .where(eq(users.id, userId))
      .returning({ id: users.id }),
    auditStatement(db, { actorId, action: "user.grant", targetId: userId, details: { amount, note }, at: now }, userExists(userId)),
  ]);
  if (updated.length === 0) throw userNotFound(userId);
}

/** Puts the account on a plan of PLANS (400 plan_not_found for another id). */
export async function setPlan(deps: AdminDeps & { plans: Plans }, actorId: string, userId: string, planId: string): Promise<void> {
  const { db, plans } = deps;
  if (!plans.has(planId)) {
    throw new DomainError("plan_not_found", `no plan '${excerpt(planId)}'; the plans are ${plans.list.map((p) => p.id).join(", ")}`, { field: "plan" });
  }
  const now = deps.now();
  const [updated] = await db.batch([
    db.update(users).set({ planId }).where(eq(users.id, userId)).returning({ id: users.id }),
    auditStatement(db, { actorId, action: "user.plan", targetId: userId, details: { plan: planId }, at: now }, userExists(userId)),
  ]);
  if (updated.length === 0) throw userNotFound(userId);
}

/** Erases the account as DELETE /me does, with its audit record in the same batch. */
export async function eraseUser(deps: AdminDeps & ErasureDeps, actorId: string, userId: string): Promise<void> {
  const record = auditStatement(deps.db, { actorId, action: "user.erase", targetId: userId, details: {}, at: deps.now() }, userExists(userId));
  await eraseAccount(deps, userId, () => userNotFound(userId), [record]);
  deps.suspendedAccounts.note(userId, undefined);
}
