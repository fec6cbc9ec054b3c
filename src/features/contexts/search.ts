import { and, desc, eq, sql } from "drizzle-orm";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { Db } from "../../platform/db";
import { hex } from "../../platform/encoding";
import { contexts } from "../../../schema/index";
import { isoTime } from "../../platform/stored-time";

// The search tables live in migrations/ (0002_search_owner.sql, 0004_search_pending.sql,
// 0021_search_pending_owner.sql), not in schema/: drizzle-kit cannot describe an FTS5
// virtual table, and triggers write the entries. Entries are indexed in bulk, off the chat
// path: a new one waits in search_pending until a search by its owner, or the background
// job, indexes it.
const searchDocs = sqliteTable("search_docs", {
  id: integer().primaryKey(),
  userId: text().notNull(),
  ownerKey: text().notNull(),
  contextId: text().notNull(),
  messageId: text(),
  body: text().notNull(),
  createdAt: integer({ mode: "timestamp_ms" }).notNull(),
});
const searchFts = sqliteTable("search_fts", { rowid: integer(), ownerKey: text(), body: text() });
const searchPending = sqliteTable("search_pending", { id: integer().primaryKey(), userId: text() });

/** Longest `q` accepted, in characters, and the most words it may hold. */
export const MAX_QUERY_LENGTH = 200;
export const MAX_QUERY_TERMS = 16;

const SNIPPET_TOKENS = 16;

/**
 * How many of the caller's matches, newest first, are ranked. BM25 must score every match
 * before it can name the best; a word found in most messages would make that 100+ ms at
 * 100,000 messages. Ranking the newest 1,000 keeps a search near 10 ms; any query with fewer
 * matches is ranked in full.
 */
export const RANK_WINDOW = 1_000;
/** Marks around each matched word in a snippet (Markdown bold: the clients render Markdown). */
export const SNIPPET_MARK = "**";

export interface SearchHit {
  contextId: string;
  contextName: string;
  /** Null when the hit is the context's name rather than one of its messages. */
  messageId: string | null;
  snippet: string;
  createdAt: string;
}

/**
 * The words of a search box entry. A word is what lies between spaces (control characters
 * count as spaces: SQLite would cut a string at NUL); words with no letter or digit cannot
 * match anything and are dropped. Everything else is text, never syntax.
 */
export function searchTerms(q: string): string[] {
  return q
    .replace(/\p{Cc}/gu, " ")
    .split(/\s+/u)
    .filter((word) => /[\p{L}\p{N}]/u.test(word));
}

/** An FTS5 string literal: the tokenizer splits it into words, so it is a phrase of plain words. */
const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`;

/**
 * The user's single index token, as the migration's triggers write it:
 * 'u' || lower(hex(user_id)) || '0' (hex of the UTF-8 bytes).
 */
export function ownerKey(userId: string): string {
  return `u${hex(new TextEncoder().encode(userId))}0`;
}

/**
 * The FTS5 MATCH expression for the caller's terms. User text only ever appears inside
 * string literals, so quotes, AND/OR/NOT/NEAR, `*`, `^`, `:` and parentheses are words
 * to look for, not operators. Every term must occur in the body column (implicit AND);
 * the owner token restricts the index walk to the caller's postings.
 */
export function matchExpression(userId: string, terms: string[]): string {
  return [`owner_key : ${phrase(ownerKey(userId))}`, ...terms.map((t) => `body : ${phrase(t)}`)].join(" AND ");
}

/** How many waiting entries the background job indexes in one batch. */
export const INDEX_BATCH = 2_000;

/**
 * Two statements, for one batch: index waiting entries (the owner's, or the oldest
 * `limit` of everyone's), then take them off the waiting list. In one transaction they
 * see the same entries, and no entry is indexed twice.
 */
function indexPendingStatements(db: Db, scope: { userId: string } | { limit: number }) {
  // The owner's waiting entries, through their index (migrations/0021_search_pending_owner.sql):
  // not all the owner's entries (70 ms at 100,000 messages), nor everyone's waiting ones,
  // which on Workers are all written since the daily job.
  const waiting =
    "userId" in scope
      ? sql`select ${searchPending.id} from ${searchPending} where ${searchPending.userId} = ${scope.userId}`
      : sql`select ${searchPending.id} from ${searchPending} order by ${searchPending.id} limit ${scope.limit}`;
  return [
    db.insert(searchFts).select(
      db
        .select({ rowid: searchDocs.id, ownerKey: searchDocs.ownerKey, body: searchDocs.body })
        .from(searchDocs)
        .where(sql`${searchDocs.id} in (${waiting})`)
        .orderBy(searchDocs.id),
    ),
    db.delete(searchPending).where(sql`${searchPending.id} in (${waiting})`).returning({ id: searchPending.id }),
  ] as const;
}

/**
 * Indexes the oldest waiting entries of all users, up to INDEX_BATCH; returns how many.
 * The Node server runs it a few times a second, the daily job once a day: a search never
 * needs it (it indexes its owner's entries itself), it only keeps the waiting list short.
 */
export async function indexPendingSearch(db: Db): Promise<number> {
  const [, indexed] = await db.batch(indexPendingStatements(db, { limit: INDEX_BATCH }));
  return indexed.length;
}

/**
 * Full-text search over the owner's message text and context names: among the newest
 * RANK_WINDOW matches, best (BM25 on the body column) first, newer first among equals.
 * Every branch's messages are searched (a hit names its message, whose branch the client
 * opens); archived contexts only when asked. The owner's entries still waiting to be
 * indexed are indexed first, in the same batch: a search finds every message stored before
 * it. One round trip.
 */
export async function searchContexts(
  db: Db,
  userId: string,
  q: string,
  limit: number,
  options: { includeArchived?: boolean } = {},
): Promise<SearchHit[]> {
  const terms = searchTerms(q).slice(0, MAX_QUERY_TERMS);
  if (terms.length === 0) return [];
  const match = matchExpression(userId, terms);
  // Rowids grow with insertion, so the RANK_WINDOW-th newest match bounds the rowids to rank:
  // FTS5 finds it walking the postings backwards and stops there.
  const oldestRanked = sql`coalesce((select rowid from search_fts where search_fts match ${match} order by rowid desc limit 1 offset ${RANK_WINDOW - 1}), 0)`;
  const query = db
    .select({
      contextId: searchDocs.contextId,
      contextName: contexts.name,
      messageId: searchDocs.messageId,
      snippet: sql<string>`snippet(search_fts, 1, ${SNIPPET_MARK}, ${SNIPPET_MARK}, '…', ${SNIPPET_TOKENS})`,
      createdAt: searchDocs.createdAt,
    })
    .from(searchFts)
    .innerJoin(searchDocs, sql`${searchDocs.id} = search_fts.rowid`)
    .innerJoin(contexts, eq(contexts.id, searchDocs.contextId))
    .where(
      and(
        sql`search_fts MATCH ${match}`,
        sql`search_fts.rowid >= ${oldestRanked}`,
        // The owner token narrows the walk; these make ownership exact.
        eq(searchDocs.userId, userId),
        eq(contexts.userId, userId),
        options.includeArchived ? undefined : eq(contexts.archived, false),
      ),
    )
    .orderBy(sql`bm25(search_fts, 0.0, 1.0)`, desc(searchDocs.createdAt), desc(searchDocs.id))
    .limit(limit);
  const [, , rows] = await db.batch([...indexPendingStatements(db, { userId }), query]);
  return rows.map((r) => ({ ...r, createdAt: isoTime(r.createdAt) }));
}

/**
 * The statement that drops a context's search entries, for the batch that deletes the
 * context. Triggers do it too; saying it here keeps the delete complete on its own.
 */
export function deleteSearchEntries(db: Db, userId: string, contextId: string) {
  return db.delete(searchDocs).where(and(eq(searchDocs.userId, userId), eq(searchDocs.contextId, contextId)));
}
