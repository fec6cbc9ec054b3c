import { contextAttachmentDeletions, removeUnusedFiles, viewOf, type AttachmentView, type FileDeps } from "../attachments/attachments";
import { and, desc, eq, isNull, sql, type SQL } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { randomId } from "../../platform/encoding";
import type { Db, Position } from "../../platform/db";
import { contexts, groups, messages, runningReplies, shares } from "../../../schema/index";
import { deleteSearchEntries } from "./search";
import { ensureUser } from "../../platform/auth/users";
import { activeLeaf, leafBelow, parentOf, selectBranch, siblingIds, type BranchRow } from "./branches";
import { isoTime } from "../../platform/stored-time";

export type NameSource = "person" | "message" | "model";

/** The longest instructions a context (or a preset in the profile) keeps, in characters. */
export const MAX_INSTRUCTIONS = 8000;

export interface ContextView {
  id: string;
  name: string;
  /** Who named it: the person, the first message's words, or the model (a title). */
  nameSource: NameSource;
  groupId: string | null;
  /** Messages in every branch. */
  messageCount: number;
  /** The last message of the active branch; null when there are no messages. */
  leafId: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface MessageView {
  id: string;
  role: "user" | "assistant";
  content: string;
  model?: string;
  /** The message it follows; null for a first message. */
  parentId: string | null;
  /** The messages that share its parent (versions of it), itself included, oldest first. */
  siblingIds: string[];
  createdAt: string;
  /** A reply's end: done, stopped by the person, or failed (nothing charged). */
  status?: "done" | "stopped" | "failed";
  /** The person's thumbs up or down on a reply, or null. */
  rating?: "up" | "down" | null;
  /** The files it carries (POST /attachments), in order; absent when none. */
  attachments?: AttachmentView[];
}

/** A reply being written in the background, as GET /contexts/{id} shows it. */
export interface RunningReplyView {
  replyId: string;
  /** The user message it answers. */
  parentId: string;
  model: string;
  /** Its text as last saved (up to a second old): GET …/messages/{id}/stream follows it live. */
  text: string;
  startedAt: string;
}

/** Which contexts a listing covers: all, one group's, or those in no group. */
export type GroupFilter = { kind: "all" } | { kind: "group"; groupId: string } | { kind: "ungrouped" };

export const contextColumns = {
  id: contexts.id,
  name: contexts.name,
  nameSource: contexts.nameSource,
  groupId: contexts.groupId,
  messageCount: contexts.messageCount,
  leafId: contexts.leafId,
  instructions: contexts.instructions,
  pinned: contexts.pinned,
  archived: contexts.archived,
  createdAt: contexts.createdAt,
  updatedAt: contexts.updatedAt,
};

export interface ContextRow {
  id: string;
  name: string;
  nameSource: NameSource;
  groupId: string | null;
  messageCount: number;
  leafId: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const toContextView = (row: ContextRow): ContextView => ({
  ...row,
  createdAt: isoTime(row.createdAt),
  updatedAt: isoTime(row.updatedAt),
});


const ownContext = (userId: string, id: string) => and(eq(contexts.id, id), eq(contexts.userId, userId));
const ownGroup = (userId: string, id: string) => and(eq(groups.id, id), eq(groups.userId, userId));

/**
 * One page of the owner's contexts, most recently updated first, ordered by
 * (updatedAt, id) descending and continued strictly after `after`: the archived ones or the
 * others, pinned or not or both. Null when the filter names a group that is not the
 * owner's. One round trip.
 */
export async function listContexts(
  db: Db,
  userId: string,
  page: { limit: number; after?: Position; filter: GroupFilter; archived?: boolean; pinned?: boolean },
): Promise<{ items: Array<ContextView & { answering: boolean }>; next: Position | null } | null> {
  const { filter, after, limit } = page;
  const conditions: Array<SQL | undefined> = [eq(contexts.userId, userId), eq(contexts.archived, page.archived ?? false)];
  if (page.pinned !== undefined) conditions.push(eq(contexts.pinned, page.pinned));
  if (filter.kind === "group") conditions.push(eq(contexts.groupId, filter.groupId));
  if (filter.kind === "ungrouped") conditions.push(isNull(contexts.groupId));
  // A row value comparison walks the (user_id, updated_at, id) index in one range.
  if (after) conditions.push(sql`(${contexts.updatedAt}, ${contexts.id}) < (${after.at}, ${after.id})`);
  const list = db
    .select({ ...contextColumns, answering: sql<number>`exists (select 1 from ${runningReplies} r where r.context_id = "contexts"."id")` })
    .from(contexts)
    .where(and(...conditions))
    .orderBy(desc(contexts.updatedAt), desc(contexts.id))
    .limit(limit + 1);

  let rows: Array<ContextRow & { answering: number }>;
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
    items: pageRows.map(({ answering, ...row }) => ({ ...toContextView(row), answering: Boolean(answering) })),
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
  input: { name: string; groupId?: string | null; instructions?: string | null },
  now: Date,
): Promise<ContextView | null> {
  const id = randomId("ctx");
  const user = ensureUser(db, principal, now);
  const instructions = input.instructions ?? null;
  const values = { id, userId: principal.userId, name: input.name, messageCount: 0, instructions, createdAt: now, updatedAt: now };
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
              nameSource: sql<string>`'person'`.as("name_source"),
              messageCount: sql<number>`0`.as("message_count"),
              leafId: sql<null>`null`.as("leaf_id"),
              instructions: sql<string | null>`${instructions}`.as("instructions"),
              pinned: sql<number>`0`.as("pinned"),
              archived: sql<number>`0`.as("archived"),
              createdAt: sql<number>`${now.getTime()}`.as("created_at"),
              updatedAt: sql<number>`${now.getTime()}`.as("updated_at"),
              importedFrom: sql<null>`null`.as("imported_from"),
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
 * The owner's context with one page of a branch, oldest first: by default the active
 * branch's newest `limit` messages; with `leaf`, those of the branch through that message
 * (down to its newest reply, see branches.ts); with `before`, the `limit` messages before
 * that one on its own branch. `nextBefore` is the id to pass as `before` for the page
 * before this one, null when there is none. One round trip.
 */
export async function getContext(
  db: Db,
  userId: string,
  id: string,
  page: { limit: number; before?: string; leaf?: string },
): Promise<
  | { found: true; context: ContextView & { messages: MessageView[]; nextBefore: string | null; running: RunningReplyView | null } }
  | { found: false; missing: "context" | "before" | "leaf" }
> {
  const anchorId = page.before ?? page.leaf;
  const last = page.before
    ? parentOf(userId, id, page.before)
    : leafBelow(id, page.leaf === undefined ? activeLeaf(userId, id) : sql`${page.leaf}`);
  const context = db.select(contextColumns).from(contexts).where(ownContext(userId, id));
  const branch = selectBranch(db, userId, id, last, page.limit + 1);
  const running = db
    .select({ replyId: runningReplies.id, parentId: runningReplies.parentId, model: runningReplies.model, text: runningReplies.text, startedAt: runningReplies.startedAt })
    .from(runningReplies)
    .where(and(eq(runningReplies.contextId, id), eq(runningReplies.userId, userId)))
    .orderBy(desc(runningReplies.startedAt))
    .limit(1);
  const [found, rows, replies, anchor] = anchorId
    ? await db.batch([
        context,
        branch,
        running,
        db.select({ id: messages.id }).from(messages).where(and(eq(messages.id, anchorId), eq(messages.contextId, id), eq(messages.userId, userId))),
      ])
    : [...(await db.batch([context, branch, running])), null];
  if (!found[0]) return { found: false, missing: "context" };
  if (anchor && anchor.length === 0) return { found: false, missing: page.before ? "before" : "leaf" };

  const more = rows.length > page.limit;
  const pageRows = (more ? rows.slice(0, page.limit) : rows).reverse();
  return {
    found: true,
    context: {
      ...toContextView(found[0]),
      messages: pageRows.map(branchMessage),
      nextBefore: more ? pageRows[0]!.id : null,
      running: replies[0] ? { ...replies[0], startedAt: replies[0].startedAt.toISOString() } : null,
    },
  };
}

/** A row of a branch read as the message it is. */
export function branchMessage(row: BranchRow): MessageView {
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    ...(row.model === null ? {} : { model: row.model }),
    parentId: row.parent_id,
    siblingIds: siblingIds(row),
    createdAt: isoTime(Number(row.created_at)),
    ...(row.role === "assistant" ? { status: row.status, rating: row.rating === 1 ? "up" : row.rating === -1 ? "down" : null } : {}),
    ...attachmentsOf(row.attachments),
  };
}

function attachmentsOf(json: string): { attachments?: AttachmentView[] } {
  const list = JSON.parse(json) as Parameters<typeof viewOf>[0][];
  return list.length === 0 ? {} : { attachments: list.map(viewOf) };
}

/** What PATCH /contexts/{id} may change. */
export interface ContextPatch {
  name?: string;
  groupId?: string | null;
  /** null clears them. */
  instructions?: string | null;
  pinned?: boolean;
  archived?: boolean;
  /** Switch to the branch through this message (down to its newest reply). */
  leafId?: string;
}

/**
 * Changes the owner's context: renames it (a name the person sets is never replaced by a
 * title), moves it into a group (or out, with null), sets its instructions, pins or
 * archives it, or switches its active branch. A rename that changes the name moves
 * updatedAt to `now`; nothing else does. Tells which of context, group and message was not
 * found otherwise. One round trip.
 */
export async function updateContext(
  db: Db,
  userId: string,
  id: string,
  patch: ContextPatch,
  now: Date,
): Promise<{ found: true; context: ContextView } | { found: false; missing: "context" | "group" | "message" }> {
  const set: Partial<Record<keyof typeof contexts.$inferInsert, unknown>> = {};
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.nameSource = "person";
    set.updatedAt = sql`case when ${contexts.name} = ${patch.name} then ${contexts.updatedAt} else ${now.getTime()} end`;
  }
  if (patch.groupId !== undefined) set.groupId = patch.groupId;
  if (patch.instructions !== undefined) set.instructions = patch.instructions;
  if (patch.pinned !== undefined) set.pinned = patch.pinned;
  if (patch.archived !== undefined) set.archived = patch.archived;
  if (patch.leafId !== undefined) set.leafId = leafBelow(id, sql`${patch.leafId}`);
  const targetGroup = patch.groupId ?? undefined;
  const update = db
    .update(contexts)
    .set(set as Partial<typeof contexts.$inferInsert>)
    .where(
      and(
        ownContext(userId, id),
        // The group check and the move are one statement, so a group deleted meanwhile is never joined.
        targetGroup === undefined
          ? undefined
          : sql`exists (select 1 from ${groups} where ${ownGroup(userId, targetGroup)})`,
        patch.leafId === undefined
          ? undefined
          : sql`exists (select 1 from ${messages} where ${messages.id} = ${patch.leafId} and ${messages.contextId} = ${id})`,
      ),
    )
    .returning(contextColumns);
  // The reads only explain a miss; they see the rows as they were before the update.
  const [context, group, message, updated] = await db.batch([
    db.select({ id: contexts.id }).from(contexts).where(ownContext(userId, id)),
    db.select({ id: groups.id }).from(groups).where(ownGroup(userId, targetGroup ?? "")),
    db.select({ id: messages.id }).from(messages).where(and(eq(messages.id, patch.leafId ?? ""), eq(messages.contextId, id))),
    update,
  ]);
  if (updated[0]) return { found: true, context: toContextView(updated[0]) };
  if (context.length === 0) return { found: false, missing: "context" };
  if (targetGroup !== undefined && group.length === 0) return { found: false, missing: "group" };
  return { found: false, missing: patch.leafId !== undefined && message.length === 0 ? "message" : "context" };
}

/**
 * Deletes the owner's context with its messages, their attachments, search entries and
 * share link, in one atomic batch that does not lean on ON DELETE CASCADE (a libSQL server
 * may run with foreign keys off); then the attachments' files no other upload keeps. False
 * when there was no such context. One round trip, and one more when it had attachments.
 */
export async function deleteContext(deps: FileDeps, userId: string, id: string): Promise<boolean> {
  const { db } = deps;
  const [files, , , , , deleted] = await db.batch([
    // Its attachments first (those no other context's message carries), while their messages still say which.
    ...contextAttachmentDeletions(db, userId, id),
    db.delete(shares).where(and(eq(shares.contextId, id), eq(shares.userId, userId))),
    db.delete(messages).where(and(eq(messages.contextId, id), eq(messages.userId, userId))),
    deleteSearchEntries(db, userId, id),
    db.delete(contexts).where(ownContext(userId, id)).returning({ id: contexts.id }),
  ]);
  await removeUnusedFiles(deps, files.map((f) => f.sha256));
  return deleted.length === 1;
}

/**
 * The owner's context with its active branch, oldest first (at most `limit` messages, the
 * newest); null when not the owner's. One round trip.
 */
export async function readActiveBranch(
  db: Db,
  userId: string,
  id: string,
  limit = MAX_BRANCH,
): Promise<{ name: string; messages: MessageView[] } | null> {
  const [found, rows] = await db.batch([
    db.select({ name: contexts.name }).from(contexts).where(ownContext(userId, id)),
    selectBranch(db, userId, id, leafBelow(id, activeLeaf(userId, id)), limit),
  ]);
  return found[0] ? { name: found[0].name, messages: rows.reverse().map(branchMessage) } : null;
}

/** The longest branch read whole (a share snapshot, a Markdown export). */
export const MAX_BRANCH = 100_000;

/**
 * A person's thumbs up or down on one of their replies (null takes it back). False when
 * `messageId` is not a reply of their context `contextId`.
 */
export async function rateReply(db: Db, userId: string, contextId: string, messageId: string, rating: "up" | "down" | null): Promise<boolean> {
  const rows = await db
    .update(messages)
    .set({ rating: rating === "up" ? 1 : rating === "down" ? -1 : null })
    .where(and(eq(messages.id, messageId), eq(messages.contextId, contextId), eq(messages.userId, userId), eq(messages.role, "assistant")))
    .returning({ id: messages.id });
  return rows.length === 1;
}
