import { and, eq, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { Batch, bind, perDb, template, type Results, type Step } from "../../platform/db";
import { randomId, sha256Hex, timeOrderedId } from "../../platform/encoding";
import { statusOf } from "../../platform/error-codes";
import { excerpt, type DomainError } from "../../platform/errors";
import type { ChatMessage } from "../../platform/models/adapter";
import { contexts, messages } from "../../../schema/index";
import type { Credits } from "../account/credits";
import { ContextNotFound, MessageNotFound } from "../contexts/errors";
import { contextNameFrom } from "../contexts/context-names";
import { branchReads, historyBudget, promptOf, type BranchEnd, type BranchRead, type HistoryMessage } from "./branch";
import { ModelLacksCapability, NotAnswerable, ParentNotAReply } from "./errors";
import { answer, contextWindowOf, creditsAfter, release, store, type AnswerRequest, type ChatDeps, type Exchange } from "./exchange";
import { answerChain, defaultModelFor, requireModel } from "./model-chain";
import type { ModelAnswer, ModelEvent } from "./model-call";
import { openExchange } from "./opening";
import { linkAttachmentsStep } from "../attachments/attachments";
import { sendableAttachments, withAttachments, type PromptAttachments, type SendableAttachments } from "../attachments/prompt-parts";

// ---------------------------------------------------------------------------------------
// A message in a context, the service behind POST /chat/send and regenerate (and /v1 with
// a context id), in the order it runs:
//   openMessage   one batch: the opening (debit, hold, key) and the context's branch
//   chatExchange  the model's reply as it comes, then one batch that stores it: the
//                 messages (a new context with them), the usage, the settled hold
// A context's messages form a tree; a message follows the end of the active branch, or the
// reply a request names (`parentId`: an edited message sent again is a sibling of the one
// it replaces), and a regenerated reply answers the same user message again. New contexts
// are created by the batch that stores the first exchange, so a failed first message
// leaves nothing behind.
// ---------------------------------------------------------------------------------------

export interface ChatReply {
  response: string;
  model: string;
  contextId: string;
  /** The stored reply; the end of the context's active branch. */
  messageId: string;
  /** The user message it answers. */
  parentId: string;
  credits: Omit<Credits, "day">;
  /** The documents whose text was cut to fit the model's window (ids), when any was. */
  attachmentsCut?: string[];
}

/** What a message adds to a context: a message (to a new context, after a reply or at the branch's end), or another answer to a message. */
export type ChatTurn =
  | {
      kind: "send";
      message: string;
      /** Undefined: a new context. */
      contextId?: string;
      /** The reply the message follows; null: a new first message; undefined: the end of the active branch. */
      parentId?: string | null;
      /** A new context's instructions (its system prompt). */
      instructions?: string | null;
      /** Uploads (POST /attachments) the message carries, in order. */
      attachments?: string[];
    }
  | { kind: "regenerate"; contextId: string; replyId: string };

export interface OpenMessageInput {
  principal: Principal;
  turn: ChatTurn;
  /** Undefined: the caller's default model, else the deployment's. */
  modelId?: string;
  /** An Idempotency-Key, and what makes two requests with it the same (default: turnFingerprint). */
  idempotency?: { key: string; fingerprint?: string };
  requestId: string;
}

/** Where the exchange goes in the context: read in the opening batch, written by the storing one. */
export interface Placement {
  turn: ChatTurn;
  userId: string;
  contextId: string;
  isNew: boolean;
  /** Regenerate: the user message answered again; send: the reply the message follows (null: none). */
  parentId: string | null;
  /** The user message's text. */
  message: string;
  instructions: string | null;
  /** When the context last changed (ms): the new messages sort after it. */
  lastUpdate: number;
  /** The new message's attachments, and the documents cut to fit the window. */
  attachments?: string[];
  cut?: string[];
}

export type OpenedMessage =
  | { kind: "replay"; body: unknown }
  | { kind: "ready"; exchange: Exchange; prompt: ChatMessage[]; placement: Placement };

/** What makes two requests with the same Idempotency-Key the same request. */
export function turnFingerprint(turn: ChatTurn, modelId: string | undefined): string {
  if (turn.kind === "regenerate") return sha256Hex(JSON.stringify(["POST regenerate", turn.contextId, turn.replyId, modelId ?? null]));
  const parts: unknown[] = ["POST /chat/send", turn.message, modelId ?? null, turn.contextId ?? null];
  // Said only when sent, so that the keys of requests made before these fields still match.
  if (turn.parentId !== undefined) parts.push({ parentId: turn.parentId });
  if (turn.instructions !== undefined && turn.instructions !== null) parts.push({ instructions: turn.instructions });
  if (turn.attachments?.length) parts.push({ attachments: turn.attachments });
  return sha256Hex(JSON.stringify(parts));
}

/**
 * Opens the exchange of a message: checks the context and the reply it follows (404 for
 * another user's or an unknown one, 400 for a user message, nothing charged), reads the
 * branch's history that fits the model's window, and debits, in one batch.
 */
export async function openMessage(deps: ChatDeps, input: OpenMessageInput): Promise<OpenedMessage> {
  const { turn } = input;
  const userId = input.principal.userId;
  const idempotency = input.idempotency && { key: input.idempotency.key, fingerprint: input.idempotency.fingerprint ?? turnFingerprint(turn, input.modelId) };
  const contextId = turn.contextId ?? randomId("ctx");
  const end = branchEnd(turn);
  const required = requiredReply(turn);
  const attached = await turnAttachments(deps, userId, turn, input.modelId);
  const batch = new Batch();
  const reads = end && addReads(batch, branchReads(deps.db, { contextId, userId, end, budget: walkBudget(deps, input), requiredReply: required }));
  const opened = await openExchange(deps, {
    principal: input.principal,
    modelId: input.modelId,
    idempotency,
    requestId: input.requestId,
    requires: turn.contextId === undefined ? undefined : { contextId, message: required === undefined ? undefined : { id: required, answersQuestion: turn.kind === "regenerate" } },
    batch,
    suits: attached?.images ? (m) => m.images : undefined,
  });
  if (opened.kind === "replay") return { kind: "replay", body: opened.body };
  const found = reads?.(opened.results);
  if (opened.kind === "refused") throw (statusOf(opened.error.code) === 402 && found && refusalOf(turn, contextId, found)) || opened.error;

  const branch = found ? await wholeBranch(deps, opened.exchange, found.branch) : [];
  const [parentId, message, previous] =
    turn.kind === "regenerate" ? [branch[0]!.id, branch[0]!.content, branch.slice(1)] : [branch[0]?.id ?? null, turn.message, branch];
  const instructions = turn.contextId === undefined ? (turn.kind === "send" ? (turn.instructions ?? null) : null) : (found?.context?.instructions ?? null);
  const text = promptOf(instructions, previous, historyBudget(contextWindowOf(opened.exchange), message, instructions), message);
  const files = { newestFirst: previous, message: attached?.rows ?? (turn.kind === "regenerate" ? branch[0]!.attachments : undefined) };
  const { prompt, cut } = await promptWithFiles(deps, opened.exchange, userId, text, files);
  const placement = { turn, userId, contextId, isNew: turn.contextId === undefined, parentId, message, instructions, lastUpdate: found?.context?.updatedAt ?? 0, attachments: attached?.rows.map((r) => r.id), cut };
  return { kind: "ready", exchange: opened.exchange, prompt, placement };
}

/** A sent message's attachments, read before anything is charged: 404 for one not the sender's, 400 for images to a model without. */
async function turnAttachments(deps: ChatDeps, userId: string, turn: ChatTurn, modelId: string | undefined): Promise<SendableAttachments | undefined> {
  if (turn.kind !== "send" || !turn.attachments?.length) return undefined;
  const attached = await sendableAttachments(deps.db, userId, turn.attachments);
  const model = modelId === undefined ? defaultModelFor(deps.models, attached.defaultModel) : requireModel(deps.models, modelId);
  if (attached.images && !model.images) throw new ModelLacksCapability(model.id, "images", "attachments");
  return attached;
}

/** The prompt with the attachments of its messages; a failure to read them releases the charge. */
async function promptWithFiles(deps: ChatDeps, exchange: Exchange, userId: string, prompt: ChatMessage[], files: Pick<PromptAttachments, "newestFirst" | "message">) {
  try {
    return await withAttachments(deps, userId, { prompt, ...files, images: exchange.chain.every((m) => m.images), contextWindow: contextWindowOf(exchange) });
  } catch (err) {
    await release(deps, exchange, "the message's attachments could not be read");
    throw err;
  }
}

/** The branch the opening batch found, read again whole when what this process kept fell short; a failure releases the charge. */
async function wholeBranch(deps: ChatDeps, exchange: Exchange, read: BranchRead): Promise<HistoryMessage[]> {
  if ("rows" in read) return read.rows;
  try {
    return await read.readWhole();
  } catch (err) {
    await release(deps, exchange, "the conversation's history could not be read");
    throw err;
  }
}

/** Where the branch sent to the model ends; none for a new context or a new first message. */
function branchEnd(turn: ChatTurn): BranchEnd | undefined {
  if (turn.kind === "regenerate") return { kind: "above-reply", replyId: turn.replyId };
  if (turn.contextId === undefined) return undefined;
  if (turn.parentId === undefined) return { kind: "leaf" };
  return turn.parentId === null ? undefined : { kind: "message", id: turn.parentId };
}

/** The reply the debit requires to exist: the one followed, or the one regenerated. */
function requiredReply(turn: ChatTurn): string | undefined {
  return turn.kind === "regenerate" ? turn.replyId : (turn.parentId ?? undefined);
}

/**
 * How many tokens of history the opening batch reads at most: the window of the model
 * asked for, less the reply and the message (the instructions, read in the same batch, are
 * trimmed for after it). Without a model named, the widest window available: the caller's
 * default model is known only once the batch has run.
 */
function walkBudget(deps: ChatDeps, input: OpenMessageInput): number {
  const { models } = deps;
  const window =
    input.modelId === undefined
      ? Math.max(...models.list().filter((m) => m.available).map((m) => m.contextWindow), 0)
      : Math.min(...answerChain(models, requireModel(models, input.modelId)).map((m) => m.contextWindow));
  return historyBudget(window, input.turn.kind === "send" ? input.turn.message : null, null);
}

type Reads = ReturnType<typeof branchReads>;
type Found = { context: { updatedAt: number; instructions: string | null } | undefined; reply: { role: string; parentRole: string | null } | undefined; branch: BranchRead };

/** Adds the context's reads to the opening batch; returns what reads their results. */
function addReads(batch: Batch, reads: Reads): (results: Results) => Found {
  const context = batch.add(reads.context);
  const reply = reads.reply && batch.add(reads.reply);
  const branch = batch.add(reads.branch);
  return (results) => ({ context: results(context), reply: reply && results(reply), branch: results(branch) });
}

/** Why a debit that requires a context (and a reply in it) charged nothing, when it is that. */
function refusalOf(turn: ChatTurn, contextId: string, found: Found): DomainError | undefined {
  if (!found.context) return new ContextNotFound(contextId);
  const required = requiredReply(turn);
  if (required === undefined) return undefined;
  const field = turn.kind === "regenerate" ? "messageId" : "parentId";
  const reply = found.reply;
  if (!reply) return new MessageNotFound(required, contextId, field);
  if (reply.role !== "assistant") return turn.kind === "regenerate" ? new NotAnswerable(required, "it is a user message") : new ParentNotAReply(required);
  if (turn.kind === "regenerate" && reply.parentRole !== "user") return new NotAnswerable(required, "it answers no user message");
  return undefined;
}

/** What a chat exchange yields: the model's reply as it comes, then the stored reply. */
export type ChatEvent = ModelEvent | { type: "done"; reply: ChatReply };

/** Runs an opened message: the model's reply as it comes, then, once stored, the reply. */
export async function* chatExchange(deps: ChatDeps, opened: ReadyMessage, request: Omit<AnswerRequest, "prompt">): AsyncGenerator<ChatEvent, void, undefined> {
  const whole = yield* answer(deps, opened.exchange, { ...request, prompt: opened.prompt });
  const rows = messageRows(deps, opened, whole);
  await storeInContext(deps, opened, whole, rows, rows.reply);
  yield { type: "done", reply: rows.reply };
}

export type ReadyMessage = Extract<OpenedMessage, { kind: "ready" }>;

/** The statements that store the messages of an exchange, and the reply they make. */
export function messageRows(deps: ChatDeps, opened: ReadyMessage, whole: ModelAnswer): { statements: Step[]; reply: ChatReply } {
  const { exchange, placement } = opened;
  const { turn, contextId, userId } = placement;
  const prepared = storeStatements(deps.db);
  // Messages sort by (createdAt, id): keep each exchange after the context's last one even
  // when clocks (of nodes, or a test's) stand still or disagree.
  const userAt = new Date(Math.max(exchange.charge.at.getTime(), placement.lastUpdate + 1));
  const replyAt = new Date(Math.max(deps.now().getTime(), userAt.getTime() + 1));
  const replyId = timeOrderedId("msg");
  const reply = { replyId, response: whole.text, model: whole.model.id, replyAt, contextId, userId, status: "done" };
  const questionId = turn.kind === "regenerate" ? placement.parentId! : timeOrderedId("msg");
  const statements =
    turn.kind === "regenerate"
      ? [
          bind(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime(), added: 1, leafId: replyId }),
          bind(prepared.insertReply, { ...reply, parentId: questionId }),
        ]
      : [
          placement.isNew
            ? bind(prepared.insertContext, { contextId, userId, name: contextNameFrom(placement.message), messageCount: 2, leafId: replyId, instructions: placement.instructions, createdAt: userAt, updatedAt: replyAt })
            : bind(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime(), added: 2, leafId: replyId }),
          bind(prepared.insertExchange, { ...reply, userMessageId: questionId, message: placement.message, parentId: placement.parentId, userAt }),
          ...(placement.attachments?.length ? [linkAttachmentsStep(questionId, userId, placement.attachments)] : []),
        ];
  // The credits as they stand once the hold is settled at the price of the model that answered.
  const { day: _day, ...credits } = creditsAfter(exchange, whole.model.id);
  const cut = placement.cut?.length ? { attachmentsCut: placement.cut } : {};
  return { statements, reply: { response: whole.text, model: whole.model.id, contextId, messageId: replyId, parentId: questionId, credits, ...cut } };
}

/**
 * Stores the exchange in its context: one batch with `rows` and the settled charge,
 * `body` kept for a retry with the same Idempotency-Key. A 404 when the context was
 * deleted while the model answered.
 */
export async function storeInContext<R>(deps: ChatDeps, opened: ReadyMessage, whole: ModelAnswer, rows: { statements: Step[]; reply: ChatReply }, body: R): Promise<void> {
  const { placement } = opened;
  try {
    await store(deps, opened.exchange, whole, { statements: rows.statements, contextId: placement.contextId, messageId: rows.reply.messageId, reply: body });
  } catch (err) {
    if (!placement.isNew && /FOREIGN KEY/i.test(String((err as Error)?.message ?? err))) {
      throw new ContextNotFound(placement.contextId, `context ${excerpt(placement.contextId)} was deleted while the model was answering; nothing was charged`);
    }
    throw err;
  }
}

/** The statements that store an exchange in a context, built once per handle (see perDb) and bound per message. */
export const storeStatements = perDb((db) => {
  const contextId = sql.placeholder("contextId");
  const userId = sql.placeholder("userId");
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
    status: sql.placeholder("status"),
  });
  const question = {
    id: sql.placeholder("userMessageId"),
    contextId,
    userId,
    role: "user" as const,
    content: sql.placeholder("message"),
    model: null,
    parentId: sql.placeholder("parentId"),
    createdAt: sql.placeholder("userAt"),
  };
  return {
    insertContext: template(
      db.insert(contexts).values({
        id: contextId,
        userId,
        groupId: null,
        name: sql.placeholder("name"),
        nameSource: "message",
        messageCount: sql.placeholder("messageCount"),
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
        .where(and(eq(contexts.id, contextId), eq(contexts.userId, userId))),
    ),
    insertExchange: template(db.insert(messages).values([question, reply("userMessageId")])),
    insertQuestion: template(db.insert(messages).values(question)),
    insertReply: template(db.insert(messages).values(reply("parentId"))),
  };
});
