import { and, eq, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { randomId, sha256Hex, timeOrderedId } from "../../platform/encoding";
import { bind, eachRow, firstRow, perDb, template, type Db, type Step, type Template } from "../../platform/db";
import { excerpt, type DomainError } from "../../platform/errors";
import { ContextNotFound, MessageNotFound } from "../contexts/errors";
import { contextNameFrom } from "../contexts/context-names";
import { textOf, type ChatMessage } from "../../platform/models/adapter";
import type { RegisteredModel } from "../../platform/models/registry";
import { contexts, messages } from "../../../schema/index";
import type { Credits } from "../account/credits";
import { NotAnswerable, ParentNotAReply } from "./errors";
import { replayTurn, type ChatDeps, type Exchange, type Settlement, type Turn } from "./exchange";
import { openExchange, type OpeningExtension } from "./opening";
import { writeTitle } from "./titles";

// ---------------------------------------------------------------------------------------
// Chat in a context, over the exchange core (exchange.ts). A context's messages form a
// tree; a message follows the end of the active branch, or the reply a request names
// (`parentId`: an edited message sent again is a sibling of the one it replaces), and a
// regenerated reply answers the same user message again. The model receives the context's
// instructions first, then the branch that leads to the message, as much as fits, read as
// one walk up the tree in the opening batch; the exchange makes its branch the active one.
// New contexts are created by the batch that stores the first exchange, so a failed first
// message leaves nothing behind; the model then titles them, in the background.
// ---------------------------------------------------------------------------------------

export { contextNameFrom };

/** Token estimate used for history trimming: ~3 characters a token plus a per-message overhead. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3) + 4;
}

/** At most this many earlier messages go to the model, whatever its window. */
const MAX_HISTORY_MESSAGES = 1000;

/** The room left for history in a model's window, after the instructions, the new message and the reply. */
export function historyBudget(model: Pick<RegisteredModel, "contextWindow">, message: string, instructions: string | null = null): number {
  const replyReserve = Math.min(4096, Math.floor(model.contextWindow / 4));
  return model.contextWindow - replyReserve - estimateTokens(message) - (instructions === null ? 0 : estimateTokens(instructions));
}

export interface ChatReply {
  response: string;
  model: string;
  contextId: string;
  /** The stored reply; the end of the context's active branch. */
  messageId: string;
  /** The user message it answers. */
  parentId: string;
  credits: Omit<Credits, "day">;
}

export interface ChatSendInput {
  principal: Principal;
  message: string;
  modelId?: string;
  contextId?: string;
  /**
   * The reply the message follows, in `contextId`; null: a new first message (the edit of
   * a first message); undefined: the end of the active branch.
   */
  parentId?: string | null;
  /** A new context's instructions (its system prompt). */
  instructions?: string | null;
  idempotencyKey?: string;
  requestId: string;
  /** What makes two requests with the same Idempotency-Key the same, when the request says more than the message (the OpenAI surface); default: chatFingerprint. */
  fingerprint?: string;
  /** Runs work that outlives the reply (a new context's title); without it, the work is not done. */
  background?: (work: Promise<void>) => void;
}

export interface RegenerateInput {
  principal: Principal;
  contextId: string;
  /** The reply to answer again; the new one is its sibling. */
  messageId: string;
  modelId?: string;
  idempotencyKey?: string;
  requestId: string;
}

/** A chat exchange opened for a message, for the surfaces that build on it (/chat/send, /v1 with a context). */
export type ChatOpening =
  | { kind: "replay"; body: unknown }
  | {
      kind: "ready";
      exchange: Exchange;
      contextId: string;
      /** What the model receives: the instructions, the branch's history that fits, then the message. */
      prompt: ChatMessage[];
      /** What the batch that stores the exchange holds for the model's reply. */
      /** What the batch that stores the exchange holds for the reply of `model`, the model that answered. */
      settle(response: string, model: RegisteredModel): Settlement<ChatReply>;
      /** A 404 when the context was deleted while the model answered. */
      explainStoreFailure(err: unknown): DomainError | undefined;
    };

/** What makes two requests with the same Idempotency-Key the same request. */
export function chatFingerprint(input: { message: string; modelId?: string; contextId?: string; parentId?: string | null; instructions?: string | null }): Promise<string> {
  const parts: unknown[] = ["POST /chat/send", input.message, input.modelId ?? null, input.contextId ?? null];
  // Said only when sent, so that the keys of requests made before these fields still match.
  if (input.parentId !== undefined) parts.push({ parentId: input.parentId });
  if (input.instructions !== undefined && input.instructions !== null) parts.push({ instructions: input.instructions });
  return sha256Hex(JSON.stringify(parts));
}

/** A message to a model, in a new or an existing context: the exchange from the debit to the stored reply. */
export async function sendChat(deps: ChatDeps, input: ChatSendInput): Promise<Turn<ChatReply>> {
  const opening = await openChat(deps, input);
  if (opening.kind === "replay") return replayed(opening.body);
  const { exchange, prompt, settle, explainStoreFailure } = opening;
  const titled = input.contextId === undefined && input.background;
  return {
    replayed: false,
    credits: exchange.credits,
    creditsAfter: (model) => exchange.creditsAfter(model),
    events: async function* (signal, stream) {
      for await (const event of exchange.run({ prompt, signal, stream, settle, explainStoreFailure })) {
        // A new context is named after its first message; the model gives it a title once
        // the reply is stored, without delaying it.
        if (event.type === "done" && titled) {
          titled(writeTitle(deps, { userId: input.principal.userId, contextId: opening.contextId, model: exchange.model, message: input.message, reply: event.reply.response, requestId: input.requestId }));
        }
        yield event;
      }
    },
  };
}

/** Another reply to the user message a reply answers: a sibling of that reply, which becomes the active branch. */
export async function regenerateReply(deps: ChatDeps, input: RegenerateInput): Promise<Turn<ChatReply>> {
  const fingerprint = await sha256Hex(JSON.stringify(["POST regenerate", input.contextId, input.messageId, input.modelId ?? null]));
  const opening = await open(deps, {
    principal: input.principal,
    contextId: input.contextId,
    modelId: input.modelId,
    idempotency: input.idempotencyKey ? { key: input.idempotencyKey, fingerprint } : undefined,
    requestId: input.requestId,
    turn: { kind: "regenerate", replyId: input.messageId },
  });
  if (opening.kind === "replay") return replayed(opening.body);
  const { exchange, prompt, settle, explainStoreFailure } = opening;
  return {
    replayed: false,
    credits: exchange.credits,
    creditsAfter: (model) => exchange.creditsAfter(model),
    events: (signal, stream) => exchange.run({ prompt, signal, stream, settle, explainStoreFailure }),
  };
}

function replayed(body: unknown): Turn<ChatReply> {
  const reply = body as ChatReply;
  return replayTurn(reply, reply.response, reply.credits, reply.model);
}

/**
 * Opens a chat exchange for a message: checks the context and the reply it follows (404
 * for another user's or an unknown one, 400 for a user message, without a charge), loads
 * the branch's history that fits the model's window, and debits, all in the one opening
 * batch.
 */
export async function openChat(deps: ChatDeps, input: ChatSendInput): Promise<ChatOpening> {
  const idempotency = input.idempotencyKey
    ? { key: input.idempotencyKey, fingerprint: input.fingerprint ?? (await chatFingerprint(input)) }
    : undefined;
  return open(deps, {
    principal: input.principal,
    contextId: input.contextId,
    modelId: input.modelId,
    idempotency,
    requestId: input.requestId,
    turn: { kind: "send", message: input.message, parentId: input.contextId === undefined ? null : input.parentId, instructions: input.instructions ?? null },
  });
}

/** What an exchange in a context adds: a message (after a reply, or the branch's end), or another answer to a message. */
type TurnKind =
  | { kind: "send"; message: string; parentId: string | null | undefined; instructions: string | null }
  | { kind: "regenerate"; replyId: string };

async function open(
  deps: ChatDeps,
  input: {
    principal: Principal;
    contextId?: string;
    modelId?: string;
    idempotency?: { key: string; fingerprint: string };
    requestId: string;
    turn: TurnKind;
  },
): Promise<ChatOpening> {
  const { db } = deps;
  const { turn } = input;
  const userId = input.principal.userId;
  const contextId = input.contextId ?? randomId("ctx");
  const isNew = input.contextId === undefined;
  const prepared = chatStatements(db);

  // The reply the debit requires: the one followed, or the one regenerated.
  const required = turn.kind === "regenerate" ? turn.replyId : (turn.parentId ?? undefined);
  let extension: OpeningExtension<ContextFound> | undefined;
  if (!isNew) {
    // Where the branch sent to the model ends: the followed reply, the end of the active
    // branch, or (regenerating) the user message the reply answers; none for a new first message.
    const history =
      turn.kind === "regenerate"
        ? bind(prepared.historyAboveReply, { contextId, userId, replyId: turn.replyId }, eachRow(historyRow))
        : turn.parentId === undefined
          ? bind(prepared.historyFromLeaf, { contextId, userId }, eachRow(historyRow))
          : turn.parentId === null
            ? undefined
            : bind(prepared.historyFromMessage, { contextId, userId, startId: turn.parentId }, eachRow(historyRow));
    extension = {
      contextId,
      message: required === undefined ? undefined : { id: required, answersQuestion: turn.kind === "regenerate" },
      reads(batch) {
        const context = batch.add(bind(prepared.context, { contextId, userId }, firstRow(contextRow)));
        const message = required === undefined ? undefined : batch.add(bind(prepared.message, { contextId, userId, messageId: required }, firstRow(messageRow)));
        const branch = history && batch.add(history);
        return (results) => ({ context: results(context), message: message && results(message), branch: branch ? results(branch) : [] });
      },
      explainRefusal({ context, message }) {
        if (!context) return new ContextNotFound(contextId);
        if (required === undefined) return undefined;
        const field = turn.kind === "regenerate" ? "messageId" : "parentId";
        if (!message) return new MessageNotFound(required, contextId, field);
        if (message.role !== "assistant") return turn.kind === "regenerate" ? new NotAnswerable(required, "it is a user message") : new ParentNotAReply(required);
        if (turn.kind === "regenerate" && message.parentRole !== "user") return new NotAnswerable(required, "it answers no user message");
        return undefined;
      },
    };
  }

  const opened = await openExchange(deps, { principal: input.principal, modelId: input.modelId, idempotency: input.idempotency, requestId: input.requestId, extension });
  if (opened.kind === "replay") return { kind: "replay", body: opened.body };

  const { exchange, found } = opened;
  const lastUpdate = found?.context?.updatedAt ?? 0;
  const instructions = isNew ? (turn.kind === "send" ? turn.instructions : null) : (found?.context?.instructions ?? null);
  // Newest first: the branch's end (a reply, or when regenerating the user message) and what leads to it.
  const branch = found?.branch ?? [];
  let message: string;
  let previous: HistoryRow[];
  let parentId: string | null;
  if (turn.kind === "regenerate") {
    [parentId, message, previous] = [branch[0]!.id, branch[0]!.content, branch.slice(1)];
  } else {
    [parentId, message, previous] = [branch[0]?.id ?? null, turn.message, branch];
  }
  const fitted = fitHistory(previous, historyBudget(exchange, message, instructions));
  const prompt: ChatMessage[] = [
    ...(instructions === null ? [] : [{ role: "system" as const, content: instructions }]),
    ...fitted,
    { role: "user", content: message },
  ];

  return {
    kind: "ready",
    exchange,
    contextId,
    prompt,
    settle(response, model) {
      // Messages sort by (createdAt, id): keep each exchange after the context's last one
      // even when clocks (of nodes, or a test's) stand still or disagree.
      const userAt = new Date(Math.max(exchange.at.getTime(), lastUpdate + 1));
      const replyAt = new Date(Math.max(deps.now().getTime(), userAt.getTime() + 1));
      const replyId = timeOrderedId("msg");
      const statements: Step[] = [];
      let questionId: string;
      if (turn.kind === "regenerate") {
        questionId = parentId!;
        statements.push(
          bind(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime(), added: 1, leafId: replyId }),
          bind(prepared.insertReply, { contextId, userId, replyId, response, model: model.id, replyAt, parentId: questionId }),
        );
      } else {
        questionId = timeOrderedId("msg");
        statements.push(
          isNew
            ? bind(prepared.insertContext, {
                contextId,
                userId,
                name: contextNameFrom(turn.message),
                leafId: replyId,
                instructions,
                createdAt: userAt,
                updatedAt: replyAt,
              })
            : bind(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime(), added: 2, leafId: replyId }),
          bind(prepared.insertExchange, {
            contextId,
            userId,
            userMessageId: questionId,
            message: turn.message,
            parentId,
            userAt,
            replyId,
            response,
            model: model.id,
            replyAt,
          }),
        );
      }
      // The model that answered (a fallback, when the one asked for failed first), and the
      // credits as they stand once the hold is settled at its price.
      const reply: ChatReply = { response, model: model.id, contextId, messageId: replyId, parentId: questionId, credits: withoutDay(exchange.creditsAfter(model.id)) };
      return { statements, contextId, messageId: replyId, reply };
    },
    explainStoreFailure(err) {
      if (!isNew && /FOREIGN KEY/i.test(String((err as Error)?.message ?? err))) {
        return new ContextNotFound(contextId, `context ${excerpt(contextId)} was deleted while the model was answering; nothing was charged`);
      }
      return undefined;
    },
  };
}

function withoutDay({ day: _day, ...credits }: Credits): Omit<Credits, "day"> {
  return credits;
}

interface HistoryRow extends ChatMessage {
  id: string;
  /** Stored messages are text: /v1 in a context stores the text of a message with images. */
  content: string;
}

/** A history row from its column values: id, role, content. */
const historyRow = (row: ArrayLike<unknown>): HistoryRow => ({ id: row[0] as string, role: row[1] as ChatMessage["role"], content: row[2] as string });

/** What the opening batch read of the context: the context (updated at, ms; its instructions), the reply named, the branch. */
interface ContextFound {
  context: { updatedAt: number; instructions: string | null } | undefined;
  message: { role: string; parentRole: string | null } | undefined;
  branch: HistoryRow[];
}

const contextRow = (row: ArrayLike<unknown>) => ({ updatedAt: row[0] as number, instructions: row[1] as string | null });
const messageRow = (row: ArrayLike<unknown>) => ({ role: row[0] as string, parentRole: row[1] as string | null });

/** The statements of a chat in a context, built once per handle (see perDb) and bound per message. */
const chatStatements = perDb((db) => {
  const contextId = sql.placeholder("contextId");
  const userId = sql.placeholder("userId");
  const owned = and(eq(contexts.id, contextId), eq(contexts.userId, userId));
  const leaf = sql`(select ${contexts.leafId} from ${contexts} where ${owned})`;
  /** The model's reply, answering the message whose id is the placeholder `parent`. */
  const reply = (parent: string) => ({
    id: sql.placeholder("replyId"),
    contextId,
    userId,
    role: "assistant" as const,
    content: sql.placeholder("response"),
    model: sql.placeholder("model"),
    parentId: sql.placeholder(parent),
    createdAt: sql.placeholder("replyAt"),
  });
  return {
    context: template(db.select({ updatedAt: contexts.updatedAt, instructions: contexts.instructions }).from(contexts).where(owned)),
    /** The reply a request names, and the role of the message it answers (to explain a refusal). */
    message: template(
      db
        .select({ role: messages.role, parentRole: sql<string | null>`(select q.role from ${messages} q where q.id = ${messages.parentId})` })
        .from(messages)
        .where(and(eq(messages.id, sql.placeholder("messageId")), eq(messages.contextId, contextId), eq(messages.userId, userId))),
    ),
    historyFromLeaf: historyStatement(db, userId, contextId, leaf),
    historyFromMessage: historyStatement(db, userId, contextId, sql`${sql.placeholder("startId")}`),
    historyAboveReply: historyStatement(
      db,
      userId,
      contextId,
      sql`(select m.parent_id from ${messages} m where m.id = ${sql.placeholder("replyId")} and m.context_id = ${contextId} and m.user_id = ${userId})`,
    ),
    insertContext: template(
      db
        .insert(contexts)
        .values({
          id: contextId,
          userId,
          groupId: null,
          name: sql.placeholder("name"),
          nameSource: "message",
          messageCount: 2,
          leafId: sql.placeholder("leafId"),
          instructions: sql.placeholder("instructions"),
          createdAt: sql.placeholder("createdAt"),
          updatedAt: sql.placeholder("updatedAt"),
        }),
    ),
    touchContext: template(
      db
        .update(contexts)
        // set() takes no placeholder: these are bound to values as the columns store them.
        .set({
          messageCount: sql`${contexts.messageCount} + ${sql.placeholder("added")}`,
          updatedAt: sql`${sql.placeholder("updatedAtMs")}`,
          leafId: sql`${sql.placeholder("leafId")}`,
        })
        .where(owned),
    ),
    insertExchange: template(
      db
        .insert(messages)
        .values([
          {
            id: sql.placeholder("userMessageId"),
            contextId,
            userId,
            role: "user",
            content: sql.placeholder("message"),
            model: null,
            parentId: sql.placeholder("parentId"),
            createdAt: sql.placeholder("userAt"),
          },
          reply("userMessageId"),
        ]),
    ),
    insertReply: template(
      db
        .insert(messages)
        .values(reply("parentId")),
    ),
  };
});

/**
 * A branch's messages from `start` up to its first, newest first: a recursive walk up
 * `parent_id`, each step a primary-key lookup, that stops after MAX_HISTORY_MESSAGES, so a
 * long context costs no more than that, however many branches it has. The token budget is
 * applied in fitHistory: a running total in SQL (a window function, then a sort back into
 * order) cost twice the read itself.
 */
function historyStatement(db: Db, userId: Placeholder, contextId: Placeholder, start: SQL): Template {
  // The query builder has no recursive CTE: the walk is a subquery it selects from, so the
  // statement is still built once and bound per message.
  return template(
    db
      .select({ id: sql<string>`id`, role: sql<ChatMessage["role"]>`role`, content: sql<string>`content` })
      .from(
        sql`(with recursive branch(id, parent_id, role, content, depth) as (
            select m.id, m.parent_id, m.role, m.content, 0 from ${messages} m
            where m.id = ${start} and m.context_id = ${contextId} and m.user_id = ${userId}
            union all
            select m.id, m.parent_id, m.role, m.content, b.depth + 1 from branch b join ${messages} m on m.id = b.parent_id
            where b.depth < ${MAX_HISTORY_MESSAGES - 1} and m.context_id = ${contextId}
          ) select id, role, content, depth from branch) as history`,
      )
      .orderBy(sql`depth`),
  );
}

/** The newest of `newestFirst` whose estimated tokens fit the budget together, oldest first. */
function fitHistory(newestFirst: ChatMessage[], budget: number): ChatMessage[] {
  let used = 0;
  let count = 0;
  for (const message of newestFirst) {
    used += estimateTokens(textOf(message.content));
    if (used > budget) break;
    count++;
  }
  return newestFirst.slice(0, count).reverse().map(({ role, content }) => ({ role, content }));
}
