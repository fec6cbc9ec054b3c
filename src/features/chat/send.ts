import { and, desc, eq, sql, type Placeholder } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { randomId, sha256Hex, timeOrderedId } from "../../platform/encoding";
import { bound, boundRows, perDb, type Db } from "../../platform/db";
import { excerpt, type DomainError } from "../../platform/errors";
import { ContextNotFound } from "../contexts/errors";
import { textOf, type ChatMessage } from "../../platform/models/adapter";
import type { RegisteredModel } from "../../platform/models/registry";
import { contexts, messages } from "../../../schema/index";
import type { Credits } from "../account/credits";
import {
  openExchange,
  replayTurn,
  type ChatDeps,
  type Exchange,
  type OpeningExtension,
  type Settlement,
  type Statement,
  type Turn,
} from "./exchange";

// ---------------------------------------------------------------------------------------
// Chat in a context, over the exchange core (exchange.ts): the history that fits goes to
// the model, and the exchange is stored in the context. New contexts are created by the
// batch that stores the first exchange, so a failed first message leaves nothing behind.
// ---------------------------------------------------------------------------------------

/** Token estimate used for history trimming: ~3 characters a token plus a per-message overhead. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3) + 4;
}

/** At most this many earlier messages go to the model, whatever its window. */
const MAX_HISTORY_MESSAGES = 1000;

/** The room left for history in a model's window, after the new message and the reply. */
export function historyBudget(model: Pick<RegisteredModel, "contextWindow">, message: string): number {
  const replyReserve = Math.min(4096, Math.floor(model.contextWindow / 4));
  return model.contextWindow - replyReserve - estimateTokens(message);
}

/** A context's name from its first message: one line, at most 60 characters. */
export function contextNameFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  if (line.length <= 60) return line;
  const cut = line.slice(0, 59);
  const space = cut.lastIndexOf(" ");
  return `${(space >= 40 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

export interface ChatReply {
  response: string;
  model: string;
  contextId: string;
  credits: Omit<Credits, "day">;
}

export interface ChatSendInput {
  principal: Principal;
  message: string;
  modelId?: string;
  contextId?: string;
  idempotencyKey?: string;
  requestId: string;
  /** What makes two requests with the same Idempotency-Key the same, when the request says more than the message (the OpenAI surface); default: chatFingerprint. */
  fingerprint?: string;
}

/** A chat exchange opened for a message, for the surfaces that build on it (/chat/send, /v1 with a context). */
export type ChatOpening =
  | { kind: "replay"; body: unknown }
  | {
      kind: "ready";
      exchange: Exchange;
      contextId: string;
      /** What the model receives: the context's history that fits, then the message. */
      prompt: ChatMessage[];
      /** What the batch that stores the exchange holds for the reply of `model`, the model that answered. */
      settle(response: string, model: RegisteredModel): Settlement<ChatReply>;
      /** A 404 when the context was deleted while the model answered. */
      explainStoreFailure(err: unknown): DomainError | undefined;
    };

/** What makes two requests with the same Idempotency-Key the same request. */
export function chatFingerprint(input: { message: string; modelId?: string; contextId?: string }): Promise<string> {
  return sha256Hex(JSON.stringify(["POST /chat/send", input.message, input.modelId ?? null, input.contextId ?? null]));
}

/** A message to a model, in a new or an existing context: the exchange from the debit to the stored reply. */
export async function sendChat(deps: ChatDeps, input: ChatSendInput): Promise<Turn<ChatReply>> {
  const opening = await openChat(deps, input);
  if (opening.kind === "replay") {
    const reply = opening.body as ChatReply;
    return replayTurn(reply, reply.response, reply.credits, reply.model);
  }
  const { exchange, prompt, settle, explainStoreFailure } = opening;
  return {
    replayed: false,
    credits: exchange.credits,
    creditsAfter: (model) => exchange.creditsAfter(model),
    events: (signal, stream) => exchange.run({ prompt, signal, stream, settle, explainStoreFailure }),
  };
}

/**
 * Opens a chat exchange for a message: checks the context (404 for another user's or an
 * unknown one, without a charge), loads the history that fits the model's window, and
 * debits, all in the one opening batch.
 */
export async function openChat(deps: ChatDeps, input: ChatSendInput): Promise<ChatOpening> {
  const { db } = deps;
  const userId = input.principal.userId;
  const contextId = input.contextId ?? randomId("ctx");
  const isNew = input.contextId === undefined;

  const extension: OpeningExtension = {};
  const prepared = chatStatements(db);
  if (!isNew) {
    extension.contextId = contextId;
    extension.reads = [
      bound(prepared.contextUpdatedAt, { contextId, userId }),
      boundRows(prepared.history, { contextId, userId }, (row) => ({ role: row[0] as ChatMessage["role"], content: row[1] as string })),
    ];
    extension.explainRefusal = ([context]) =>
      (context as unknown[]).length === 0 ? new ContextNotFound(contextId) : undefined;
  }
  const idempotency = input.idempotencyKey
    ? { key: input.idempotencyKey, fingerprint: input.fingerprint ?? (await chatFingerprint(input)) }
    : undefined;

  const opened = await openExchange(deps, { principal: input.principal, modelId: input.modelId, idempotency, requestId: input.requestId, extension });
  if (opened.kind === "replay") return { kind: "replay", body: opened.body };

  const { exchange } = opened;
  const lastUpdate = isNew ? 0 : ((opened.reads[0] as Array<{ updatedAt: Date }>)[0]?.updatedAt.getTime() ?? 0);
  const loaded = isNew ? [] : (opened.reads[1] as ChatMessage[]);
  const prompt: ChatMessage[] = [...fitHistory(loaded, historyBudget(exchange, input.message)), { role: "user", content: input.message }];

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
      // The model that answered (a fallback, when the one asked for failed first), and the
      // credits as they stand once the hold is settled at its price.
      const reply: ChatReply = { response, model: model.id, contextId, credits: withoutDay(exchange.creditsAfter(model.id)) };
      const statements: Statement[] = [
        isNew
          ? bound(prepared.insertContext, { contextId, userId, name: contextNameFrom(input.message), createdAt: userAt, updatedAt: replyAt })
          : bound(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime() }),
        bound(prepared.insertExchange, {
          contextId,
          userId,
          userMessageId: timeOrderedId("msg"),
          message: input.message,
          userAt,
          replyId: timeOrderedId("msg"),
          response,
          model: model.id,
          replyAt,
        }),
      ];
      return { statements, contextId, reply };
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

/** The statements of a chat in a context, built once per handle (see perDb). */
const chatStatements = perDb((db) => {
  const contextId = sql.placeholder("contextId");
  const userId = sql.placeholder("userId");
  const owned = and(eq(contexts.id, contextId), eq(contexts.userId, userId));
  return {
    contextUpdatedAt: db.select({ updatedAt: contexts.updatedAt }).from(contexts).where(owned).prepare(),
    history: historyStatement(db, userId, contextId).prepare(),
    insertContext: db
      .insert(contexts)
      .values({
        id: contextId,
        userId,
        groupId: null,
        name: sql.placeholder("name"),
        messageCount: 2,
        createdAt: sql.placeholder("createdAt"),
        updatedAt: sql.placeholder("updatedAt"),
      })
      .prepare(),
    touchContext: db
      .update(contexts)
      // set() takes no placeholder: this one is bound to the time in ms, as the column stores it.
      .set({ messageCount: sql`${contexts.messageCount} + 2`, updatedAt: sql`${sql.placeholder("updatedAtMs")}` })
      .where(owned)
      .prepare(),
    insertExchange: db
      .insert(messages)
      .values([
        { id: sql.placeholder("userMessageId"), contextId, userId, role: "user", content: sql.placeholder("message"), model: null, createdAt: sql.placeholder("userAt") },
        {
          id: sql.placeholder("replyId"),
          contextId,
          userId,
          role: "assistant",
          content: sql.placeholder("response"),
          model: sql.placeholder("model"),
          createdAt: sql.placeholder("replyAt"),
        },
      ])
      .prepare(),
  };
});

/**
 * A context's newest messages, newest first: a walk down its index that stops after
 * MAX_HISTORY_MESSAGES, so a long context costs no more than that. The token budget is
 * applied in fitHistory: a running total in SQL (a window function, then a sort back into
 * order) cost twice the read itself.
 */
function historyStatement(db: Db, userId: Placeholder, contextId: Placeholder) {
  return db
    .select({ role: messages.role, content: messages.content })
    .from(messages)
    .where(and(eq(messages.contextId, contextId), eq(messages.userId, userId)))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(MAX_HISTORY_MESSAGES);
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
  return newestFirst.slice(0, count).reverse();
}
