import type { Deps } from "../../platform/deps";
import { and, desc, eq, gt, isNull, or, sql } from "drizzle-orm";
import { randomId } from "../../platform/encoding";
import type { Db } from "../../platform/db";
import { contexts, shares } from "../../../schema/index";
import type { Position } from "../../platform/db";
import { readActiveBranch, type MessageView } from "./contexts";

/** A shared message: what the snapshot keeps of it (no ids, nothing about the owner). */
export type SharedMessage = Pick<MessageView, "role" | "content" | "model" | "createdAt" | "attachments">;

export interface Snapshot {
  name: string;
  messages: SharedMessage[];
}

export interface SharedView extends Snapshot {
  sharedAt: string;
  expiresAt: string | null;
}

export interface ShareView {
  token: string;
  contextId: string;
  name: string;
  createdAt: string;
  expiresAt: string | null;
}

/**
 * Largest snapshot kept, in bytes of JSON. D1 refuses rows over 2 MB; staying under it keeps
 * both databases alike.
 */
export const MAX_SNAPSHOT_BYTES = 1_900_000;

/** 16 random bytes: a 128-bit bearer secret. */
const newToken = () => randomId("shr", 16);

const live = (now: Date) => or(isNull(shares.expiresAt), gt(shares.expiresAt, now));

/**
 * Shares the owner's context as it is now: a snapshot of its name and active branch behind a
 * public token. Sharing again replaces the snapshot and the expiry under the same token,
 * unless the old link has expired, which gets a fresh token so that it stays dead.
 * Two round trips: read the context, then write the snapshot.
 */
export async function shareContext(
  db: Db,
  userId: string,
  contextId: string,
  options: { expiresInSeconds?: number },
  now: Date,
): Promise<ShareView | "not-found" | "too-large"> {
  const context = await readActiveBranch(db, userId, contextId);
  if (!context) return "not-found";
  const snapshot: Snapshot = {
    name: context.name,
    messages: context.messages.map(({ role, content, model, createdAt, attachments }) => ({
      role,
      content,
      ...(model === undefined ? {} : { model }),
      createdAt,
      ...(attachments === undefined ? {} : { attachments }),
    })),
  };
  const json = JSON.stringify(snapshot);
  if (new TextEncoder().encode(json).length > MAX_SNAPSHOT_BYTES) return "too-large";

  const expiresAt = options.expiresInSeconds === undefined ? null : new Date(now.getTime() + options.expiresInSeconds * 1000);
  // Inserted from the context row, so a context deleted since the read is simply not found;
  // drizzle lists the table's columns in schema order, so the fields follow that order.
  const rows = await db
    .insert(shares)
    .select(
      db
        .select({
          token: sql<string>`${newToken()}`.as("token"),
          contextId: contexts.id,
          userId: contexts.userId,
          name: sql<string>`${context.name}`.as("name"),
          snapshot: sql<string>`${json}`.as("snapshot"),
          createdAt: sql<number>`${now.getTime()}`.as("created_at"),
          expiresAt: sql<number | null>`${expiresAt?.getTime() ?? null}`.as("expires_at"),
        })
        .from(contexts)
        .where(and(eq(contexts.id, contextId), eq(contexts.userId, userId))),
    )
    .onConflictDoUpdate({
      target: shares.contextId,
      set: {
        token: sql`case when ${shares.expiresAt} is not null and ${shares.expiresAt} <= ${now.getTime()} then excluded.token else ${shares.token} end`,
        name: sql`excluded.name`,
        snapshot: sql`excluded.snapshot`,
        createdAt: sql`excluded.created_at`,
        expiresAt: sql`excluded.expires_at`,
      },
    })
    .returning({ token: shares.token, contextId: shares.contextId, name: shares.name, createdAt: shares.createdAt, expiresAt: shares.expiresAt });
  return rows[0] ? toShareView(rows[0]) : "not-found";
}

const toShareView = (r: { token: string; contextId: string; name: string; createdAt: Date; expiresAt: Date | null }): ShareView => ({
  token: r.token,
  contextId: r.contextId,
  name: r.name,
  createdAt: r.createdAt.toISOString(),
  expiresAt: r.expiresAt?.toISOString() ?? null,
});

/** The snapshot behind a live token, or null (unknown, revoked or expired). One round trip. */
export async function readShared(db: Db, token: string, now: Date): Promise<SharedView | null> {
  const [row] = await db
    .select({ snapshot: shares.snapshot, createdAt: shares.createdAt, expiresAt: shares.expiresAt })
    .from(shares)
    .where(and(eq(shares.token, token), live(now)));
  if (!row) return null;
  const snapshot = row.snapshot as Snapshot;
  return {
    name: snapshot.name,
    messages: snapshot.messages,
    sharedAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
  };
}

/**
 * Revokes the share link of the owner's context. Tells whether the context or the link was
 * missing. One round trip.
 */
export async function revokeShare(db: Db, userId: string, contextId: string): Promise<"revoked" | "no-context" | "no-share"> {
  const [context, deleted] = await db.batch([
    db.select({ id: contexts.id }).from(contexts).where(and(eq(contexts.id, contextId), eq(contexts.userId, userId))),
    db
      .delete(shares)
      .where(and(eq(shares.contextId, contextId), eq(shares.userId, userId)))
      .returning({ token: shares.token }),
  ]);
  if (context.length === 0) return "no-context";
  return deleted.length === 1 ? "revoked" : "no-share";
}

/** One page of the owner's live links, newest first, keyset on (createdAt, token). One round trip. */
export async function listShares(
  db: Db,
  userId: string,
  page: { limit: number; after?: Position },
  now: Date,
): Promise<{ items: ShareView[]; next: Position | null }> {
  const rows = await db
    .select({ token: shares.token, contextId: shares.contextId, name: shares.name, createdAt: shares.createdAt, expiresAt: shares.expiresAt })
    .from(shares)
    .where(
      and(
        eq(shares.userId, userId),
        live(now),
        page.after ? sql`(${shares.createdAt}, ${shares.token}) < (${page.after.at}, ${page.after.id})` : undefined,
      ),
    )
    .orderBy(desc(shares.createdAt), desc(shares.token))
    .limit(page.limit + 1);
  const more = rows.length > page.limit;
  const pageRows = more ? rows.slice(0, page.limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { items: pageRows.map(toShareView), next: more && last ? { at: last.createdAt.getTime(), id: last.token } : null };
}

/** A share's public page: PUBLIC_BASE_URL, else an origin the entry knows (never a request's Host header). */
export function shareUrl(deps: Pick<Deps, "config" | "baseUrl">, token: string): string {
  const { config, baseUrl } = deps;
  const base = config.PUBLIC_BASE_URL ?? baseUrl ?? `http://localhost:${config.PORT}`;
  return `${base.replace(/\/+$/, "")}/s/${token}`;
}
