import { and, eq, sql } from "drizzle-orm";
import { Batch, bind, firstRow, perDb, selectTemplate, template, type Step } from "../../platform/db";
import { timeOrderedId } from "../../platform/encoding";
import type { DomainError } from "../../platform/errors";
import type { LiveEvent, LiveText, LiveTexts } from "../../platform/live-text";
import { messages, runningReplies } from "../../../schema/index";
import { linkAttachmentsStep } from "../attachments/attachments";
import { contextNameFrom } from "../contexts/context-names";
import { ContextNotFound, MessageNotFound } from "../contexts/errors";
import { answer, creditsAfter, creditsOf, release, store, type ChatDeps } from "./exchange";
import { HOLD_MARGIN_MS } from "./holds";
import { ReplyLost } from "./errors";
import { ReplyStopped, type ModelAnswer } from "./model-call";
import { storeStatements, type ChatReply, type ReadyMessage } from "./send";

// ---------------------------------------------------------------------------------------
// Replies in the background (`background: true`, which the web client always asks for): a
// reply that runs to its end whether or not its client stays. In the order it runs:
//   placeReply   one batch before the model call: the user message (a new context with
//                it) and a running reply, so that the conversation, the person's message
//                and the reply so far are there for any request, from any device
//   runReply     the exchange, detached from the request: its text grows in this
//                process's LiveTexts and is saved every second; a stop asked anywhere is
//                read back at each save
//   finishReply  one batch: the reply as a message (done, stopped or failed), charged
//                (done; stopped with text) or refunded (stopped before a word; failed)
// Followers read a running reply from this process's LiveTexts when it runs here, else
// from its saved text (followReply). Without `background`, a client that leaves cancels
// the exchange and is refunded, as before.
// ---------------------------------------------------------------------------------------

/** How often a running reply's text is saved, and a stop asked of another process looked for. */
export const SAVE_EVERY_MS = 1_000;

/** How often a running reply looks for a stop asked in this process. */
const STOP_CHECK_MS = 100;

/** A reply placed in its context before the model answers. */
export interface Placed {
  replyId: string;
  /** The user message it answers. */
  questionId: string;
  contextId: string;
  userId: string;
  /** The user message's time: the reply comes after it. */
  userAt: Date;
}

/** How a reply in the background ended, as its followers read it. */
export type Finished = { status: "done" | "stopped"; reply: ChatReply } | { status: "failed"; error: DomainError; reply: ChatReply };

/**
 * Places an opened message's exchange in its context: the user message (and the new
 * context), and the running reply; the context's active branch ends at the user message
 * while the reply runs. One batch.
 */
export async function placeReply(deps: ChatDeps, opened: ReadyMessage): Promise<Placed> {
  const { placement, exchange } = opened;
  const { turn, contextId, userId } = placement;
  const prepared = storeStatements(deps.db);
  const userAt = new Date(Math.max(exchange.charge.at.getTime(), placement.lastUpdate + 1));
  const replyId = timeOrderedId("msg");
  const questionId = turn.kind === "regenerate" ? placement.parentId! : timeOrderedId("msg");
  const batch = new Batch();
  if (turn.kind === "regenerate") {
    batch.add(bind(prepared.touchContext, { contextId, userId, updatedAtMs: userAt.getTime(), added: 0, leafId: questionId }));
  } else {
    const name = contextNameFrom(placement.message);
    batch.add(
      placement.isNew
        ? bind(prepared.insertContext, { contextId, userId, name, messageCount: 1, leafId: questionId, instructions: placement.instructions, createdAt: userAt, updatedAt: userAt })
        : bind(prepared.touchContext, { contextId, userId, updatedAtMs: userAt.getTime(), added: 1, leafId: questionId }),
    );
    batch.add(bind(prepared.insertQuestion, { contextId, userId, userMessageId: questionId, message: placement.message, parentId: placement.parentId, userAt }));
    if (placement.attachments?.length) batch.add(linkAttachmentsStep(questionId, userId, placement.attachments));
  }
  const running = runningStatements(deps.db);
  const model = exchange.chain[0]!.id;
  batch.add(bind(running.insert, { id: replyId, contextId, userId, parentId: questionId, model, holdId: exchange.charge.holdId, at: userAt }));
  try {
    await batch.run(deps.db);
  } catch (err) {
    await release(deps, exchange, "the reply could not be placed in its context");
    if (!placement.isNew && /FOREIGN KEY/i.test(String((err as Error)?.message ?? err))) throw new ContextNotFound(contextId);
    throw err;
  }
  return { replyId, questionId, contextId, userId, userAt };
}

/**
 * Runs a placed reply to its end, detached from any request: its text grows in `live`, is
 * saved every second, and ends stored (finishReply). `live.stop` aborts it with
 * ReplyStopped (a stop asked here); one asked elsewhere is read back at each save.
 */
export async function runReply(deps: ChatDeps, opened: ReadyMessage, placed: Placed, live: LiveText<Finished>): Promise<void> {
  const { stop } = live;
  const saving = setInterval(() => void saveProgress(deps, placed, live.text, stop), SAVE_EVERY_MS);
  // A stop asked by another request of this process is taken from here, in this request's
  // own context (Workers refuse I/O across requests, and aborting the model's fetch is I/O).
  const watching = setInterval(() => {
    if (live.stopAsked && !stop.signal.aborted) stop.abort(new ReplyStopped());
  }, STOP_CHECK_MS);
  let whole: ModelAnswer | undefined;
  let failure: DomainError | undefined;
  try {
    const events = answer(deps, opened.exchange, { prompt: opened.prompt, signal: stop.signal, stream: true });
    for (let next = await events.next(); ; next = await events.next()) {
      if (next.done) {
        whole = next.value;
        break;
      }
      if (next.value.type === "delta") live.append(next.value.text);
    }
  } catch (err) {
    failure = err as DomainError; // the charge was released
  } finally {
    clearInterval(saving);
    clearInterval(watching);
  }
  try {
    live.end(await finishReply(deps, opened, placed, whole, failure ?? null, live.text));
  } catch (err) {
    deps.log.error("a reply in the background could not be stored", { requestId: opened.exchange.requestId, replyId: placed.replyId, err });
    live.fail(err);
  }
}

/** Saves the text so far (unless it is already saved) and reads whether a stop was asked of another process. One statement. */
async function saveProgress(deps: ChatDeps, placed: Placed, text: string, stop: AbortController): Promise<void> {
  try {
    const [row] = await runningStatements(deps.db).save.all({ id: placed.replyId, text, at: deps.now().getTime() });
    if (row?.stopRequested && !stop.signal.aborted) stop.abort(new ReplyStopped());
  } catch (err) {
    deps.log.warn("could not save a running reply's text", { replyId: placed.replyId, err });
  }
}

/**
 * The reply as a message, in one batch that ends its exchange: charged when the model
 * finished, or was stopped after writing something; refunded when it was stopped before
 * a word, or failed (its text so far kept, marked failed).
 */
async function finishReply(deps: ChatDeps, opened: ReadyMessage, placed: Placed, whole: ModelAnswer | undefined, failure: DomainError | null, soFar: string): Promise<Finished> {
  const { exchange } = opened;
  const status = failure ? "failed" : whole!.stopped ? "stopped" : "done";
  const text = whole?.text ?? soFar;
  const model = whole?.model.id ?? exchange.chain[0]!.id;
  const charged = status === "done" || (status === "stopped" && text !== "");
  const credits = charged ? creditsAfter(exchange, model) : { ...creditsOf(exchange), used: creditsOf(exchange).used - exchange.charge.credits, remaining: creditsOf(exchange).remaining + exchange.charge.credits };
  const { day: _day, ...shown } = credits;
  const cut = opened.placement.cut?.length ? { attachmentsCut: opened.placement.cut } : {};
  const reply: ChatReply = { response: text, model, contextId: placed.contextId, messageId: placed.replyId, parentId: placed.questionId, credits: shown, ...cut };
  const statements = finishRows(deps, placed, { text, model, status });
  if (charged) await store(deps, exchange, whole!, { statements, contextId: placed.contextId, messageId: placed.replyId, reply });
  else if (failure) await runFinish(deps, statements);
  else await release(deps, exchange, "stopped before the model wrote anything", statements, { model, outcome: "stopped" });
  return failure ? { status: "failed", error: failure, reply } : { status: status as "done" | "stopped", reply };
}

/** A failed reply's rows, after answer() has already released its charge. */
async function runFinish(deps: ChatDeps, statements: Step[]): Promise<void> {
  const batch = new Batch();
  for (const s of statements) batch.add(s);
  await batch.run(deps.db);
}

/** The statements that turn a running reply into a message and make it the end of the active branch. */
function finishRows(deps: ChatDeps, placed: Placed, reply: { text: string; model: string; status: "done" | "stopped" | "failed" }): Step[] {
  const prepared = storeStatements(deps.db);
  const replyAt = new Date(Math.max(deps.now().getTime(), placed.userAt.getTime() + 1));
  const { contextId, userId, replyId } = placed;
  return [
    bind(prepared.insertReply, { replyId, contextId, userId, response: reply.text, model: reply.model, replyAt, parentId: placed.questionId, status: reply.status }),
    bind(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime(), added: 1, leafId: replyId }),
    bind(runningStatements(deps.db).remove, { id: replyId }),
  ];
}

const runningFields = { text: runningReplies.text, parentId: runningReplies.parentId, model: runningReplies.model, updatedAt: runningReplies.updatedAt };
const messageFields = { content: messages.content, parentId: messages.parentId, model: messages.model, status: messages.status, role: messages.role };

/** The running replies' statements, built once per handle. */
const runningStatements = perDb((db) => ({
  insert: template(
    db.insert(runningReplies).values({
      id: sql.placeholder("id"),
      contextId: sql.placeholder("contextId"),
      userId: sql.placeholder("userId"),
      parentId: sql.placeholder("parentId"),
      model: sql.placeholder("model"),
      holdId: sql.placeholder("holdId"),
      startedAt: sql.placeholder("at"),
      updatedAt: sql.placeholder("at"),
    }),
  ),
  save: db
    .update(runningReplies)
    .set({ text: sql`${sql.placeholder("text")}`, updatedAt: sql`${sql.placeholder("at")}` })
    .where(eq(runningReplies.id, sql.placeholder("id")))
    .returning({ stopRequested: runningReplies.stopRequested })
    .prepare(),
  remove: template(db.delete(runningReplies).where(eq(runningReplies.id, sql.placeholder("id")))),
  message: selectTemplate(
    messageFields,
    db
      .select(messageFields)
      .from(messages)
      .where(and(eq(messages.id, sql.placeholder("id")), eq(messages.contextId, sql.placeholder("contextId")), eq(messages.userId, sql.placeholder("userId")))),
  ),
  requestStop: db
    .update(runningReplies)
    .set({ stopRequested: true })
    .where(and(eq(runningReplies.id, sql.placeholder("id")), eq(runningReplies.contextId, sql.placeholder("contextId")), eq(runningReplies.userId, sql.placeholder("userId"))))
    .returning({ id: runningReplies.id })
    .prepare(),
  read: selectTemplate(
    runningFields,
    db
      .select(runningFields)
      .from(runningReplies)
      .where(and(eq(runningReplies.id, sql.placeholder("id")), eq(runningReplies.contextId, sql.placeholder("contextId")), eq(runningReplies.userId, sql.placeholder("userId")))),
  ),
}));

/** Which reply, of whom. */
export interface ReplyRef {
  userId: string;
  contextId: string;
  replyId: string;
}

/** A reply's key among the live texts: its owner and context are part of it, so a request finds only its own person's replies. */
export function liveKey(ref: ReplyRef): string {
  return `${ref.userId}/${ref.contextId}/${ref.replyId}`;
}

/** A reply as followers read it once it has ended (without the credits, which its own request was told). */
export interface EndedReply {
  status: "done" | "stopped" | "failed";
  messageId: string;
  contextId: string;
  parentId: string;
  model: string;
}

/**
 * A reply's text from `offset` as it is written, then how it ended: live when it runs in
 * this process; else from its saved text, read again every second until it is a message
 * (a reply whose process died ends failed once its hold is stale). 404 for another
 * person's or an unknown reply.
 */
export async function* followReply(deps: ChatDeps, live: LiveTexts, ref: ReplyRef, offset: number, signal: AbortSignal): AsyncGenerator<LiveEvent<EndedReply>, void, undefined> {
  const here = live.get<Finished>(liveKey(ref));
  if (here) {
    for await (const event of here.follow(offset, signal)) {
      if (event.type !== "end") yield event;
      else if (event.result.status === "failed") yield { type: "error", error: event.result.error };
      else yield { type: "end", result: endedOf(event.result) };
    }
    return;
  }
  let at = offset;
  for (;;) {
    const state = await readReply(deps, ref);
    if (state.kind === "message") {
      if (state.text.length > at) yield { type: "text", text: state.text.slice(at), offset: state.text.length };
      yield { type: "end", result: state.ended };
      return;
    }
    if (state.text.length > at) {
      yield { type: "text", text: state.text.slice(at), offset: state.text.length };
      at = state.text.length;
    }
    // Saved every second while it runs: a reply unsaved for longer than a model may keep
    // silent lost its process, and its charge is refunded by the next opening batch or the cron.
    if (deps.now().getTime() - state.updatedAt > staleAfterMs(deps)) {
      yield { type: "error", error: new ReplyLost(ref.replyId) };
      return;
    }
    if (signal.aborted) return;
    await new Promise((wake) => setTimeout(wake, SAVE_EVERY_MS));
  }
}

/** How long a running reply may go unsaved before its process is taken for dead: the stale window of its hold. */
function staleAfterMs(deps: ChatDeps): number {
  return deps.config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS;
}

type ReplyState = { kind: "running"; text: string; updatedAt: number } | { kind: "message"; text: string; ended: EndedReply };

/** A reply as the database has it: running (its saved text), or a message. 404 when it is neither. */
async function readReply(deps: ChatDeps, ref: ReplyRef): Promise<ReplyState> {
  const prepared = runningStatements(deps.db);
  const values = { id: ref.replyId, contextId: ref.contextId, userId: ref.userId };
  const batch = new Batch();
  const running = batch.add(bind(prepared.read, values, firstRow((r) => ({ text: r.text as string, updatedAt: r.updatedAt as number }))));
  const message = batch.add(
    bind(prepared.message, values, firstRow((r) => ({ text: r.content as string, parentId: r.parentId as string, model: r.model as string | null, status: r.status as EndedReply["status"], role: r.role as string }))),
  );
  const results = await batch.run(deps.db);
  const row = results(running);
  if (row) return { kind: "running", text: row.text, updatedAt: row.updatedAt };
  const stored = results(message);
  if (stored?.role !== "assistant") throw new MessageNotFound(ref.replyId, ref.contextId, "replyId");
  const ended = { status: stored.status, messageId: ref.replyId, contextId: ref.contextId, parentId: stored.parentId, model: stored.model ?? "" };
  return { kind: "message", text: stored.text, ended };
}

function endedOf(finished: Finished): EndedReply {
  const { reply } = finished;
  return { status: finished.status, messageId: reply.messageId, contextId: reply.contextId, parentId: reply.parentId, model: reply.model };
}

/**
 * Stops a running reply: what the model wrote so far is kept (charged if it wrote
 * anything). Asked of the process writing it, or, when that is another, through the
 * database (that process reads it within a second). A reply that already ended is
 * answered as it is. 404 for another person's or an unknown reply.
 */
export async function stopReply(deps: ChatDeps, live: LiveTexts, ref: ReplyRef, signal: AbortSignal): Promise<EndedReply & { text: string }> {
  const here = live.get<Finished>(liveKey(ref));
  if (here) {
    if (!here.ended) here.askStop();
  } else {
    await runningStatements(deps.db).requestStop.all({ id: ref.replyId, contextId: ref.contextId, userId: ref.userId });
  }
  let last: EndedReply | undefined;
  let text = "";
  for await (const event of followReply(deps, live, ref, 0, signal)) {
    if (event.type === "text") text += event.text;
    else if (event.type === "end") last = event.result;
    else throw event.error;
  }
  if (!last) throw new MessageNotFound(ref.replyId, ref.contextId, "replyId");
  return { ...last, text };
}
