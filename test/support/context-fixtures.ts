import { eq, sql } from "drizzle-orm";
import { randomId } from "../../src/platform/encoding";
import { userIdFor } from "../../src/platform/auth/identity";
import type { Db } from "../../src/platform/db";
import { contexts, messages, users } from "../../schema/index";

/**
 * The user row of the person the harness signs in as `name` (sub `user:<name>`), created if
 * need be; returns the user id. Fixtures write rows for that user as chat would.
 */
export async function seedUser(db: Db, issuer: string, name: string): Promise<string> {
  const id = await userIdFor(issuer, `user:${name}`);
  await db
    .insert(users)
    .values({ id, issuer, subject: `user:${name}`, name, createdAt: new Date(0) })
    .onConflictDoNothing();
  return id;
}

/** A context row, as the chat service creates one. */
export async function addContext(
  db: Db,
  userId: string,
  context: { name: string; at: Date; groupId?: string | null },
): Promise<string> {
  const id = randomId("ctx");
  await db.insert(contexts).values({
    id,
    userId,
    name: context.name,
    groupId: context.groupId ?? null,
    messageCount: 0,
    createdAt: context.at,
    updatedAt: context.at,
  });
  return id;
}

export interface NewMessage {
  content: string;
  role?: "user" | "assistant";
  model?: string;
  /** Defaults to `start` plus the message's index in milliseconds. */
  at?: Date;
}

/**
 * Appends messages to a context the way chat does: each follows the one before it (the
 * first follows `options.parentId`, by default the end of the active branch), the branch
 * they make becomes the active one, and messageCount and updatedAt (the last message's
 * time) move, in one batch. Returns the new message ids in order.
 */
export async function addMessages(
  db: Db,
  userId: string,
  contextId: string,
  batch: NewMessage[],
  start: Date,
  options: { parentId?: string | null } = {},
): Promise<string[]> {
  const [context] = await db.select({ leafId: contexts.leafId }).from(contexts).where(eq(contexts.id, contextId));
  let parentId = options.parentId === undefined ? (context?.leafId ?? null) : options.parentId;
  const rows = batch.map((m, i) => {
    const row = {
      id: randomId("msg"),
      contextId,
      userId,
      role: m.role ?? (i % 2 === 0 ? ("user" as const) : ("assistant" as const)),
      content: m.content,
      model: m.model ?? null,
      parentId,
      createdAt: m.at ?? new Date(start.getTime() + i),
    };
    parentId = row.id;
    return row;
  });
  const last = rows[rows.length - 1]!;
  await db.batch([
    db.insert(messages).values(rows),
    db
      .update(contexts)
      .set({ messageCount: sql`${contexts.messageCount} + ${rows.length}`, updatedAt: last.createdAt, leafId: last.id })
      .where(eq(contexts.id, contextId)),
  ]);
  return rows.map((r) => r.id);
}

/** How many rows a table holds for a context: to prove that nothing was left behind. */
export async function countRows(db: Db, table: "messages" | "search_docs" | "shares", contextId: string): Promise<number> {
  const [row] = await db.all<{ n: number }>(sql`select count(*) as n from ${sql.identifier(table)} where context_id = ${contextId}`);
  return Number(row!.n);
}
