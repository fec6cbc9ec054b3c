import { desc, eq, sql } from "drizzle-orm";
import type { Db } from "../../platform/db";
import { randomId, sha256Hex } from "../../platform/encoding";
import { DomainError, excerpt } from "../../platform/errors";
import type { Plans } from "../../platform/plans";
import { invites, users } from "../../../schema/index";
import { auditStatement } from "./audit";

// ---------------------------------------------------------------------------------------
// Invites for SIGN_UP=invite: a code shown once to the admin who makes it, kept as its
// SHA-256 (src/features/sign-in/sign-up.ts uses it up at sign-up), with its uses, expiry and
// the plan its accounts start on. Making and revoking one are audited in the same batch.
// ---------------------------------------------------------------------------------------

export interface NewInvite {
  uses: number;
  expiresAt: Date | null;
  plan: string | null;
  note: string | null;
}

export interface InviteView {
  id: string;
  usesLeft: number;
  expiresAt: string | null;
  plan: string | null;
  note: string | null;
  createdBy: string | null;
  createdAt: string;
  /** The accounts made with it, oldest first. */
  usedBy: Array<{ id: string; name: string; createdAt: string }>;
}

/** Makes an invite; its code, returned once, is never stored. */
export async function createInvite(deps: { db: Db; plans: Plans; now: () => Date }, actorId: string, input: NewInvite): Promise<InviteView & { code: string }> {
  const { db, plans } = deps;
  if (input.plan !== null && !plans.has(input.plan)) {
    throw new DomainError("plan_not_found", `no plan '${excerpt(input.plan)}'; the plans are ${plans.list.map((p) => p.id).join(", ")}`, { field: "plan" });
  }
  const now = deps.now();
  const id = randomId("inv");
  // 128 random bits, grouped for reading aloud or typing.
  const code = randomId("", 16).slice(1).match(/.{1,6}/g)!.join("-");
  const row = { id, codeHash: sha256Hex(code), usesLeft: input.uses, expiresAt: input.expiresAt, planId: input.plan, note: input.note, createdBy: actorId, createdAt: now };
  const details = { inviteId: id, uses: input.uses, plan: input.plan, expiresAt: input.expiresAt?.toISOString() ?? null, note: input.note };
  await db.batch([db.insert(invites).values(row), auditStatement(db, { actorId, action: "invite.create", targetId: id, details, at: now })]);
  return { ...toView(row, []), code };
}

/** Every invite, newest first, with who used it. One round trip. */
export async function listInvites(db: Db): Promise<InviteView[]> {
  const [rows, joined] = await db.batch([
    db.select().from(invites).orderBy(desc(invites.createdAt), desc(invites.id)),
    db
      .select({ inviteId: users.inviteId, id: users.id, name: users.name, createdAt: users.createdAt })
      .from(users)
      .where(sql`${users.inviteId} is not null`)
      .orderBy(users.createdAt),
  ]);
  return rows.map((r) => toView(r, joined.filter((u) => u.inviteId === r.id)));
}

/** Revokes an invite: its code stops working at once. 404 invite_not_found. */
export async function deleteInvite(deps: { db: Db; now: () => Date }, actorId: string, id: string): Promise<void> {
  const { db } = deps;
  const now = deps.now();
  const [, deleted] = await db.batch([
    // The record first, while the invite still exists for its guard.
    auditFor(db, actorId, id, now),
    db.delete(invites).where(eq(invites.id, id)).returning({ id: invites.id }),
  ]);
  if (deleted.length === 0) throw new DomainError("invite_not_found", /^inv_[A-Za-z0-9_-]{22}$/.test(id) ? `no invite ${id}` : "no such invite; use an id GET /admin/invites lists");
}

function auditFor(db: Db, actorId: string, id: string, now: Date) {
  return auditStatement(db, { actorId, action: "invite.delete", targetId: id, details: { inviteId: id }, at: now }, sql`exists (select 1 from invites where id = ${id})`);
}

function toView(row: typeof invites.$inferSelect, usedBy: Array<{ id: string; name: string; createdAt: Date }>): InviteView {
  return {
    id: row.id,
    usesLeft: row.usesLeft,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    plan: row.planId,
    note: row.note,
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    usedBy: usedBy.map((u) => ({ id: u.id, name: u.name, createdAt: u.createdAt.toISOString() })),
  };
}
