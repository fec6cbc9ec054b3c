import { and, asc, eq, ne, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { randomId } from "../../platform/encoding";
import type { Db } from "../../platform/db";
import { contexts, groups } from "../../../schema/index";
import { ensureUser } from "../../platform/auth/users";

export interface GroupView {
  id: string;
  name: string;
  contextCount: number;
  createdAt: string;
  updatedAt: string;
}

const groupColumns = {
  id: groups.id,
  name: groups.name,
  createdAt: groups.createdAt,
  updatedAt: groups.updatedAt,
};
// Spelled out with an alias: drizzle leaves column names unqualified inside a one-table select.
// Archived contexts are not listed in their group, so they are not counted either.
const contextCount = sql<number>`(select count(*) from ${contexts} as c where c.group_id = ${groups}.id and c.user_id = ${groups}.user_id and c.archived = 0)`;

const toGroupView = (row: { id: string; name: string; createdAt: Date; updatedAt: Date }, count: number): GroupView => ({
  id: row.id,
  name: row.name,
  contextCount: Number(count),
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const ownGroup = (userId: string, id: string) => and(eq(groups.id, id), eq(groups.userId, userId));

/** All of the owner's groups, by name. One round trip. */
export async function listGroups(db: Db, userId: string): Promise<GroupView[]> {
  const rows = await db
    .select({ ...groupColumns, contextCount })
    .from(groups)
    .where(eq(groups.userId, userId))
    .orderBy(asc(groups.name), asc(groups.id));
  return rows.map((r) => toGroupView(r, r.contextCount));
}

/** Creates a group; null when the caller already has one with this name. One round trip. */
export async function createGroup(db: Db, principal: Principal, name: string, now: Date): Promise<GroupView | null> {
  const insert = db
    .insert(groups)
    .values({ id: randomId("grp"), userId: principal.userId, name, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
    .returning(groupColumns);
  const user = ensureUser(db, principal, now);
  const rows = user ? (await db.batch([user, insert]))[1] : await insert;
  return rows[0] ? toGroupView(rows[0], 0) : null;
}

/**
 * Renames the owner's group. "conflict" when another of their groups has the name already;
 * the check and the write are one statement. One round trip.
 */
export async function renameGroup(
  db: Db,
  userId: string,
  id: string,
  name: string,
  now: Date,
): Promise<GroupView | "not-found" | "conflict"> {
  const taken = db
    .select({ id: groups.id })
    .from(groups)
    .where(and(eq(groups.userId, userId), eq(groups.name, name), ne(groups.id, id)));
  const [found, updated] = await db.batch([
    db.select({ contextCount }).from(groups).where(ownGroup(userId, id)),
    db
      .update(groups)
      .set({ name, updatedAt: now })
      .where(and(ownGroup(userId, id), sql`not exists ${taken}`))
      .returning(groupColumns),
  ]);
  if (!found[0]) return "not-found";
  return updated[0] ? toGroupView(updated[0], found[0].contextCount) : "conflict";
}

/**
 * Deletes the owner's group; its contexts stay, in no group (their updatedAt is untouched).
 * False when there was no such group. One atomic round trip.
 */
export async function deleteGroup(db: Db, userId: string, id: string): Promise<boolean> {
  const [, deleted] = await db.batch([
    db.update(contexts).set({ groupId: null }).where(and(eq(contexts.groupId, id), eq(contexts.userId, userId))),
    db.delete(groups).where(ownGroup(userId, id)).returning({ id: groups.id }),
  ]);
  return deleted.length === 1;
}
