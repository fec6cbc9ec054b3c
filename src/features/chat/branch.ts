import { and, eq, sql, type Placeholder, type SQL } from "drizzle-orm";
import { Batch, bind, eachRow, firstRow, perDb, selectTemplate, type Db, type Template } from "../../platform/db";
import { textOf, type ChatMessage } from "../../platform/models/adapter";
import { messageTokens } from "../../platform/models/tokens";
import { SizedCache } from "../../platform/sized-cache";
import { contexts, messages } from "../../../schema/index";

// ---------------------------------------------------------------------------------------
// What the model is sent of a context: its instructions first, then the messages of the
// branch that leads to the new message, newest kept first, as many as fit the model's
// window. The branch is read by walking up `parent_id` from where it ends, in the batch
// that opens the exchange; the walk stops once the messages read fill the window, so a
// message costs the same at depth 1,000 as at depth 100. It also stops at the end of the
// branch it read last time (kept per context in this process, see KnownBranch): a
// message in a conversation that goes on reads the exchange added since, not the window
// again.
// ---------------------------------------------------------------------------------------

/** At most this many earlier messages go to the model, whatever its window. */
const MAX_HISTORY_MESSAGES = 1000;

/** A message of the branch, as read and as sent. Stored messages are text. */
export interface HistoryMessage {
  id: string;
  role: ChatMessage["role"];
  content: string;
  /** The ids of its attachments, comma-separated, in order; null when it has none. */
  attachments?: string | null;
}

/** The room left for history in a model's window, after the reply, the instructions and the new message. */
export function historyBudget(contextWindow: number, message: string | null, instructions: string | null): number {
  const replyReserve = Math.min(4096, Math.floor(contextWindow / 4));
  return contextWindow - replyReserve - (message === null ? 0 : messageTokens(message)) - (instructions === null ? 0 : messageTokens(instructions));
}

/** The prompt: the instructions, the newest of `newestFirst` that fit `budget` (oldest first), then the message. */
export function promptOf(instructions: string | null, newestFirst: HistoryMessage[], budget: number, message: string): ChatMessage[] {
  let used = 0;
  let count = 0;
  // A reply stopped or failed before the model wrote a word is kept for the person, not sent.
  newestFirst = newestFirst.filter((m) => !(m.role === "assistant" && m.content === ""));
  for (const m of newestFirst) {
    used += messageTokens(textOf(m.content));
    if (used > budget) break;
    count++;
  }
  const history = newestFirst.slice(0, count).reverse().map(({ role, content }): ChatMessage => ({ role, content }));
  return [...(instructions === null ? [] : [{ role: "system" as const, content: instructions }]), ...history, { role: "user", content: message }];
}

/** Where the branch sent to the model ends. */
export type BranchEnd =
  /** The end of the context's active branch. */
  | { kind: "leaf" }
  /** A reply the message follows. */
  | { kind: "message"; id: string }
  /** The user message a regenerated reply answers: the message itself comes first, outside the budget. */
  | { kind: "above-reply"; replyId: string };

/** A message as the walk reads it: with its size in tokens as the walk counts them (SQL's estimate). */
interface WalkedMessage extends HistoryMessage {
  tokens: number;
}

const historyFields = {
  id: sql<string>`id`,
  role: sql<ChatMessage["role"]>`role`,
  content: sql<string>`content`,
  attachments: sql<string | null>`attachments`,
  tokens: sql<number>`tokens`,
};
const contextFields = { updatedAt: contexts.updatedAt, instructions: contexts.instructions };
// The parent's id named with its table: drizzle writes a column of the selected table bare
// ("parent_id"), which inside this subquery would be q's own parent_id, a comparison no row
// meets, made by reading the whole messages table for every message that names its parent.
const replyFields = { role: messages.role, parentRole: sql<string | null>`(select q.role from ${messages} q where q.id = ${messages}.parent_id)` };

/** The statements of a chat in a context, built once per handle (see perDb) and bound per message. */
const branchStatements = perDb((db) => {
  const contextId = sql.placeholder("contextId");
  const userId = sql.placeholder("userId");
  const owned = and(eq(contexts.id, contextId), eq(contexts.userId, userId));
  const leaf = sql`(select ${contexts.leafId} from ${contexts} where ${owned})`;
  return {
    context: selectTemplate(contextFields, db.select(contextFields).from(contexts).where(owned)),
    /** The reply a request names, and the role of the message it answers (to explain a refusal). */
    reply: selectTemplate(
      replyFields,
      db
        .select(replyFields)
        .from(messages)
        .where(and(eq(messages.id, sql.placeholder("messageId")), eq(messages.contextId, contextId), eq(messages.userId, userId))),
    ),
    leaf: historyStatement(db, { userId, contextId, start: leaf, countStart: true }),
    message: historyStatement(db, { userId, contextId, start: sql`${sql.placeholder("startId")}`, countStart: true }),
    "above-reply": historyStatement(db, {
      userId,
      contextId,
      start: sql`(select m.parent_id from ${messages} m where m.id = ${sql.placeholder("replyId")} and m.context_id = ${contextId} and m.user_id = ${userId})`,
      countStart: false,
    }),
  };
});

/** The walk's estimate of a message's tokens, in SQL (characters as SQLite counts them). */
const tokensOf = (column: SQL) => sql`(length(${column}) + 2) / 3 + 4`;

/**
 * A branch's messages from `start` up to its first, newest first: a recursive walk up
 * `parent_id`, each step a primary-key lookup, carrying the tokens read so far. It stops
 * once they pass `budget` (the estimate in SQL counts characters as SQLite does, never more
 * than promptOf, which trims exactly), after MAX_HISTORY_MESSAGES, or at the message
 * `stopAt` (read, not gone past; null: none). continueWalk applies the same rules.
 */
function historyStatement(db: Db, at: { userId: Placeholder; contextId: Placeholder; start: SQL; countStart: boolean }): Template<keyof typeof historyFields> {
  const { userId, contextId, start } = at;
  // The query builder has no recursive CTE: the walk is a subquery it selects from, so the
  // statement is still built once and bound per message.
  return selectTemplate(
    historyFields,
    db
      .select(historyFields)
      .from(
        sql`(with recursive branch(id, parent_id, role, content, depth, tokens) as (
            select m.id, m.parent_id, m.role, m.content, 0, ${at.countStart ? tokensOf(sql`m.content`) : sql`0`} from ${messages} m
            where m.id = ${start} and m.context_id = ${contextId} and m.user_id = ${userId}
            union all
            select m.id, m.parent_id, m.role, m.content, b.depth + 1, b.tokens + ${tokensOf(sql`m.content`)} from branch b join ${messages} m on m.id = b.parent_id
            where b.depth < ${MAX_HISTORY_MESSAGES - 1} and b.tokens <= ${sql.placeholder("budget")} and b.id is not ${sql.placeholder("stopAt")} and m.context_id = ${contextId}
          ) select id, role, content, depth, ${tokensOf(sql`content`)} as tokens, (select group_concat(attachment_id) from (select attachment_id from message_attachments
              where message_id = branch.id order by position)) as attachments from branch) as history`,
      )
      .orderBy(sql`depth`),
  );
}

/**
 * The last branch read of each context (by person and context), newest message first, kept
 * by this process: a message's content never changes once stored, so the branch above a
 * message is the same whenever it is read. The walk stops at the first message of the one
 * kept and goes on through it here: what the window holds is not read again. What the
 * walk needs it still reads (the context and its person, the messages added since), and a
 * branch that does not lead to the one kept is read whole.
 */
interface KnownBranch {
  /** Newest first: the first is where the branch read last ended. */
  rows: WalkedMessage[];
  /** It reaches the first message, or as many messages as are ever sent: a walk through it never needs more. */
  whole: boolean;
}

/**
 * The branches kept, by the characters of their messages: 8 million in all (16 MB at most
 * in memory: V8 keeps text as one or two bytes a character), 512 Ki a branch (a 128k-token
 * window's worth: the catalog's widest models).
 */
const KNOWN_BRANCH_CHARS = 8 * 1024 * 1024;
const KNOWN_BRANCH_MAX_CHARS = 512 * 1024;

const knownBranches = perDb(() => new SizedCache<string, KnownBranch>(KNOWN_BRANCH_CHARS, KNOWN_BRANCH_MAX_CHARS));

/**
 * The branch the walk found: what it read, continued through `known` when it stopped at
 * `known`'s first message, by the walk's own rules (historyStatement). `countStart`: the
 * first message counts towards the budget. `short`: the walk would have read on past the
 * end of `known`, which does not reach that far: the branch must be read whole.
 */
export function continueWalk(read: WalkedMessage[], known: KnownBranch | undefined, budget: number, countStart: boolean): KnownBranch & { short: boolean } {
  const through = known && read.length > 0 && read[read.length - 1]!.id === known.rows[0]!.id;
  const candidates = through ? [...read, ...known.rows.slice(1)] : read;
  const rows: WalkedMessage[] = [];
  let tokens = 0;
  for (const row of candidates) {
    if (rows.length > 0 && (tokens > budget || rows.length >= MAX_HISTORY_MESSAGES)) return { rows, whole: rows.length >= MAX_HISTORY_MESSAGES, short: false };
    tokens += rows.length > 0 || countStart ? row.tokens : 0;
    rows.push(row);
  }
  const stopsHere = tokens > budget || rows.length >= MAX_HISTORY_MESSAGES;
  // Run out with room left: the first message, if what was read, or the known branch, reaches it.
  const reachesFirst = !through || known.whole;
  return { rows, whole: rows.length >= MAX_HISTORY_MESSAGES || (!stopsHere && reachesFirst), short: !stopsHere && !reachesFirst };
}

/** The branch as the opening batch found it, or how to read it whole when what is kept fell short. */
export type BranchRead = { rows: HistoryMessage[] } | { readWhole(): Promise<HistoryMessage[]> };

/** The reads of a message in an existing context, for its opening batch. */
export function branchReads(db: Db, where: { contextId: string; userId: string; end: BranchEnd; budget: number; requiredReply?: string }) {
  const prepared = branchStatements(db);
  const { contextId, userId, end, budget } = where;
  const cache = knownBranches(db);
  const key = `${userId}/${contextId}`;
  // Taken now: a message of the same context answered meanwhile may replace it.
  const known = cache.get(key);
  const countStart = end.kind !== "above-reply";
  const values = (stopAt: string | null) =>
    end.kind === "leaf"
      ? { contextId, userId, budget, stopAt }
      : end.kind === "message"
        ? { contextId, userId, budget, stopAt, startId: end.id }
        : { contextId, userId, budget, stopAt, replyId: end.replyId };
  const walked = eachRow(
    (row): WalkedMessage => ({
      id: row.id as string,
      role: row.role as ChatMessage["role"],
      content: row.content as string,
      attachments: row.attachments as string | null,
      tokens: Number(row.tokens),
    }),
  );
  const keep = (branch: KnownBranch) => {
    if (branch.rows.length > 0) cache.set(key, branch, branch.rows.reduce((chars, row) => chars + row.content.length + (row.attachments?.length ?? 0), 0));
    return branch.rows;
  };
  const readWhole = async () => {
    const batch = new Batch();
    const slot = batch.add(bind(prepared[end.kind], values(null), walked));
    return keep(continueWalk((await batch.run(db))(slot), undefined, budget, countStart));
  };
  const found = (rows: Parameters<typeof walked>[0]): BranchRead => {
    const branch = continueWalk(walked(rows), known, budget, countStart);
    return branch.short ? { readWhole } : { rows: keep(branch) };
  };
  return {
    context: bind(prepared.context, { contextId, userId }, firstRow((row) => ({ updatedAt: row.updatedAt as number, instructions: row.instructions as string | null }))),
    reply:
      where.requiredReply === undefined
        ? undefined
        : bind(prepared.reply, { contextId, userId, messageId: where.requiredReply }, firstRow((row) => ({ role: row.role as string, parentRole: row.parentRole as string | null }))),
    branch: bind(prepared[end.kind], values(known ? known.rows[0]!.id : null), found),
  };
}
