import { and, desc, lt, or, eq, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Db, Position } from "../../platform/db";
import { timeOrderedId } from "../../platform/encoding";
import { auditEvents, users } from "../../../schema/index";

// ---------------------------------------------------------------------------------------
// The audit log: one row per admin action, added to the very batch that makes the action,
// so that no action is without its record and no record without its action.
// ---------------------------------------------------------------------------------------

export type AuditAction =
  | "user.suspend"
  | "user.unsuspend"
  | "user.grant"
  | "user.plan"
  | "user.erase"
  | "invite.create"
  | "invite.delete";

export interface AuditEntry {
  actorId: string;
  action: AuditAction;
  targetId: string | null;
  details: Record<string, unknown>;
  at: Date;
}

/** The guard of an action on an account: it exists (an action on nobody leaves no record). */
export function userExists(userId: string): SQL {
  return sql`exists (select 1 from ${users} where ${users.id} = ${userId})`;
}

/** The record of an action, for the action's batch; written only where `guard` holds (the action's own condition). */
export function auditStatement(db: Db, entry: AuditEntry, guard: SQL = sql`1`) {
  const row = {
    // Ordered by the real clock within one `at`, so that actions of one instant keep their order.
    id: sql<string>`${timeOrderedId("aud")}`.as("id"),
    at: sql<number>`${entry.at.getTime()}`.as("at"),
    actorId: sql<string>`${entry.actorId}`.as("actor_id"),
    action: sql<string>`${entry.action}`.as("action"),
    targetId: sql<string | null>`${entry.targetId}`.as("target_id"),
    details: sql<string>`${JSON.stringify(entry.details)}`.as("details"),
  };
  return db.insert(auditEvents).select(db.select(row).from(sql`(select 1)`).where(guard));
}

export interface AuditView {
  id: string;
  at: string;
  actorId: string;
  /** The admin's name now; null once their account is erased. */
  actorName: string | null;
  action: AuditAction;
  targetId: string | null;
  /** The account's name now; null for an invite, or once the account is erased. */
  targetName: string | null;
  details: Record<string, unknown>;
}

/** A page of the audit log, newest first. One read. */
export async function listAudit(db: Db, page: { limit: number; after?: Position; targetId?: string }): Promise<{ items: AuditView[]; next: Position | null }> {
  const after = page.after;
  // The names as the accounts have them now, for a log that reads "who did what to whom".
  const actor = alias(users, "actor");
  const target = alias(users, "target");
  const rows = await db
    .select({ event: auditEvents, actorName: actor.name, targetName: target.name })
    .from(auditEvents)
    .leftJoin(actor, eq(actor.id, auditEvents.actorId))
    .leftJoin(target, eq(target.id, auditEvents.targetId))
    .where(
      and(
        page.targetId === undefined ? undefined : eq(auditEvents.targetId, page.targetId),
        after ? or(lt(auditEvents.at, new Date(after.at)), and(eq(auditEvents.at, new Date(after.at)), lt(auditEvents.id, after.id))) : undefined,
      ),
    )
    .orderBy(desc(auditEvents.at), desc(auditEvents.id))
    .limit(page.limit + 1);
  const more = rows.length > page.limit;
  const shown = more ? rows.slice(0, page.limit) : rows;
  const last = shown.at(-1)?.event;
  return {
    items: shown.map(({ event: r, actorName, targetName }) => ({
      id: r.id,
      at: r.at.toISOString(),
      actorId: r.actorId,
      actorName,
      action: r.action as AuditAction,
      targetId: r.targetId,
      targetName,
      details: r.details,
    })),
    next: more && last ? { at: last.at.getTime(), id: last.id } : null,
  };
}
