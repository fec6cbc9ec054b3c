import { and, asc, desc, eq, isNull, sql, type SQL } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { randomId } from "../../platform/encoding";
import type { Db, Position } from "../../platform/db";
import { contexts, groups, messages, shares } from "../../../schema/index";
import { deleteSearchEntries } from "./search";
import { ensureUser } from "../../platform/auth/users";

/** What a message shows of itself, in a context and in a share snapshot. */
const messageColumns = {
  id: messages.id,
  role: messages.role,
  content: messages.content,
  model: messages.model,
  createdAt: messages.createdAt,
};

export interface ContextView {
  id: string;
  name: string;
  groupId: string | null;
  messageCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface MessageView {
  id: string;
  role: "user" | "assistant";
  content: string;
  model?: string;
  createdAt: string;
}

/** Which contexts a listing covers: all, one group's, or those in no group. */
export type GroupFilter = { kind: "all" } | { kind: "group"; groupId: string } | { kind: "ungrouped" };

const contextColumns = {
  id: contexts.id,
  name: contexts.name,
  groupId: contexts.groupId,
  messageCount: contexts.messageCount,
  createdAt: contexts.createdAt,
  updatedAt: contexts.updatedAt,
};

interface ContextRow {
  id: string;
  name: string;
  groupId: string | null;
  messageCount: number;
  createdAt: Date;
  updatedAt: Date;
}

export const toContextView = (row: ContextRow): ContextView => ({
  ...row,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});


const ownContext = (userId: string, id: string) => and(eq(contexts.id, id), eq(contexts.userId, userId));
const ownGroup = (userId: string, id: string) => and(eq(groups.id, id), eq(groups.userId, userId));

/**
 * One page of the owner's contexts, most recently updated first, ordered by
 * (updatedAt, id) descending and continued strictly after `after`. Null when the filter
 * names a group that is not the owner's. One round trip.
 */
export async function listContexts(
  db: Db,
  userId: string,
  page: { limit: number; after?: Position; filter: GroupFilter },
): Promise<{ items: ContextView[]; next: Position | null } | null> {
  const { filter, after, limit } = page;
  const conditions: Array<SQL | undefined> = [eq(contexts.userId, userId)];
  if (filter.kind === "group") conditions.push(eq(contexts.groupId, filter.groupId));
  if (filter.kind === "ungrouped") conditions.push(isNull(contexts.groupId));
  // A row value comparison walks the (user_id, updated_at, id) index in one range.
  if (after) conditions.push(sql`(${contexts.updatedAt}, ${contexts.id}) < (${after.at}, ${after.id})`);
  const list = db
    .select(contextColumns)
    .from(contexts)
    .where(and(...conditions))
    .orderBy(desc(contexts.updatedAt), desc(contexts.id))
    .limit(limit + 1);

  let rows: ContextRow[];
  if (filter.kind === "group") {
    const [group, listed] = await db.batch([
      db.select({ id: groups.id }).from(groups).where(ownGroup(userId, filter.groupId)),
      list,
    ]);
    if (group.length === 0) return null;
    rows = listed;
  } else {
    rows = await list;
  }
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(toContextView),
    next: more && last ? { at: last.updatedAt.getTime(), id: last.id } : null,
  };
}

/**
 * Creates a context for the caller, in `groupId` when given. Null when that group is not
 * the caller's. One round trip.
 */
export async function createContext(
  db: Db,
  principal: Principal,
  input: { name: string; groupId?: string | null },
  now: Date,
): Promise<ContextView | null> {
  const id = randomId("ctx");
  const user = ensureUser(db, principal, now);
  const values = { id, userId: principal.userId, name: input.name, messageCount: 0, createdAt: now, updatedAt: now };
  const insert = input.groupId
    ? // Inserted only if the group is the caller's, checked in the same statement. drizzle
      // lists the table's columns in schema order, so the selected fields follow that order.
      db
        .insert(contexts)
        .select(
          db
            .select({
              id: sql<string>`${id}`.as("id"),
              userId: groups.userId,
              groupId: groups.id,
              name: sql<string>`${input.name}`.as("name"),
              messageCount: sql<number>`0`.as("message_count"),
              createdAt: sql<number>`${now.getTime()}`.as("created_at"),
              updatedAt: sql<number>`${now.getTime()}`.as("updated_at"),
            })
            .from(groups)
            .where(ownGroup(principal.userId, input.groupId)),
        )
        .returning(contextColumns)
    : db.insert(contexts).values(values).returning(contextColumns);
  const rows = user ? (await db.batch([user, insert]))[1] : await insert;
  return rows[0] ? toContextView(rows[0]) : null;
}

/**
 * The owner's context with one page of its messages: the `limit` newest before message
 * `before` (or the newest of all), returned oldest first. `nextBefore` is the id to pass as
 * `before` for the page before this one, null when there is none. One round trip.
 */
export async function getContext(
  db: Db,
  userId: string,
  id: string,
  page: { limit: number; before?: string },
): Promise<
  | { found: true; context: ContextView & { messages: MessageView[]; nextBefore: string | null } }
  | { found: false; missing: "context" | "before" }
> {
  const anchor = page.before
    ? db
        .select({ createdAt: messages.createdAt, id: messages.id })
        .from(messages)
        .where(and(eq(messages.id, page.before), eq(messages.contextId, id), eq(messages.userId, userId)))
    : null;
  const older = page.before
    ? sql`(${messages.createdAt}, ${messages.id}) < (select m.created_at, m.id from ${messages} m where m.id = ${page.before} and m.context_id = ${id})`
    : undefined;
  const newestFirst = db
    .select(messageColumns)
    .from(messages)
    .where(and(eq(messages.contextId, id), eq(messages.userId, userId), older))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(page.limit + 1);
  const context = db.select(contextColumns).from(contexts).where(ownContext(userId, id));

  const [found, rows, anchorRows] = anchor
    ? await db.batch([context, newestFirst, anchor])
    : [...(await db.batch([context, newestFirst])), null];
  if (!found[0]) return { found: false, missing: "context" };
  if (anchorRows && anchorRows.length === 0) return { found: false, missing: "before" };

  const more = rows.length > page.limit;
  const pageRows = (more ? rows.slice(0, page.limit) : rows).reverse();
  return {
    found: true,
    context: {
      ...toContextView(found[0]),
      messages: pageRows.map(toMessageView),
      nextBefore: more ? pageRows[0]!.id : null,
    },
  };
}

export const toMessageView = (m: {
  id: string;
  role: "user" | "assistant";
  content: string;
  model: string | null;
  createdAt: Date;
}): MessageView => ({
  id: m.id,
  role: m.role,
  content: m.content,
  ...(m.model === null ? {} : { model: m.model }),
  createdAt: m.createdAt.toISOString(),
});

/**
 * Renames the owner's context and/or moves it into a group (or out, with null). A rename
 * that changes the name moves updatedAt to `now`; moving between groups does not. Tells
 * which of the two was not found otherwise. One round trip.
 */
export async function updateContext(
  db: Db,
  userId: string,
  id: string,
  patch: { name?: string; groupId?: string | null },
  now: Date,
): Promise<{ found: true; context: ContextView } | { found: false; missing: "context" | "group" }> {
  const set: { name?: string; groupId?: string | null; updatedAt?: SQL } = {};
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.updatedAt = sql`case when ${contexts.name} = ${patch.name} then ${contexts.updatedAt} else ${now.getTime()} end`;
  }
  if (patch.groupId !== undefined) set.groupId = patch.groupId;
  const targetGroup = patch.groupId ?? undefined;
  const update = db
    .update(contexts)
    .set(set)
    .where(
      and(
        ownContext(userId, id),
        // The group check and the move are one statement, so a group deleted meanwhile is never joined.
        targetGroup === undefined
          ? undefined
          : sql`exists (select 1 from ${groups} where ${ownGroup(userId, targetGroup)})`,
      ),
    )
    .returning(contextColumns);
  // The two reads only explain a miss; they see the rows as they were before the update.
  const [context, group, updated] = await db.batch([
    db.select({ id: contexts.id }).from(contexts).where(ownContext(userId, id)),
    db.select({ id: groups.id }).from(groups).where(ownGroup(userId, targetGroup ?? "")),
    update,
  ]);
  if (updated[0]) return { found: true, context: toContextView(updated[0]) };
  const groupMissing = context.length === 1 && targetGroup !== undefined && group.length === 0;
  return { found: false, missing: groupMissing ? "group" : "context" };
}

/**
 * Deletes the owner's context with its messages, search entries and share link, in one
 * atomic batch that does not lean on ON DELETE CASCADE (a libSQL server may run with
 * foreign keys off). False when there was no such context. One round trip.
 */
export async function deleteContext(db: Db, userId: string, id: string): Promise<boolean> {
  const [, , , deleted] = await db.batch([
    db.delete(shares).where(and(eq(shares.contextId, id), eq(shares.userId, userId))),
    db.delete(messages).where(and(eq(messages.contextId, id), eq(messages.userId, userId))),
    deleteSearchEntries(db, userId, id),
    db.delete(contexts).where(ownContext(userId, id)).returning({ id: contexts.id }),
  ]);
  return deleted.length === 1;
}

/** Every message of the owner's context, oldest first, with the context; null when not the owner's. */
export async function readWholeContext(
  db: Db,
  userId: string,
  id: string,
): Promise<{ name: string; messages: MessageView[] } | null> {
  const [found, rows] = await db.batch([
    db.select({ name: contexts.name }).from(contexts).where(ownContext(userId, id)),
    db
      .select(messageColumns)
      .from(messages)
      .where(and(eq(messages.contextId, id), eq(messages.userId, userId)))
      .orderBy(asc(messages.createdAt), asc(messages.id)),
  ]);
  return found[0] ? { name: found[0].name, messages: rows.map(toMessageView) } : null;
}
