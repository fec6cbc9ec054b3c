import { timeOrderedId } from "../../platform/encoding";
import type { Config } from "../../platform/config";
import { Batch, step, type Db, type Step } from "../../platform/db";
import type { DomainError } from "../../platform/errors";
import type { Logger } from "../../platform/log";
import { UpstreamError, type ChatMessage, type ModelOutcome, type ModelRequest, type ModelTooling, type StreamPiece, type ToolCallDelta } from "../../platform/models/adapter";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { creditsFor, type Credits } from "../account/credits";
import { usageEventStatement } from "../account/usage";
import { createDeadline, type Deadline } from "./deadline";
import { ExchangeCancelled, ModelFailed, ModelTimedOut, ModelUnavailable } from "./errors";
import { releaseHoldStatements, renewalInterval, renewHold, settleHoldStatements, type HeldCharge } from "./holds";
import { finishClaimStatement, releaseClaimStatement, type IdempotencyClaim } from "./idempotency";
import { timingStatement, type ExchangeTiming } from "./model-speed";
import { replyCap } from "./reply-cap";

/** What the chat services need from the runtime. */
export interface ChatDeps {
  db: Db;
  config: Config;
  models: ModelRegistry;
  now: () => Date;
  log: Logger;
}

// ---------------------------------------------------------------------------------------
// The exchange core, from start to finish: debit and hold -> call the model -> store and
// settle the hold, or refund and release it. It knows messages, not contexts, so chat in
// a context (chat.ts) and OpenAI's completions (completions.ts) share it; the routes only
// put its events on the wire. Round trips: one batch before the model call (opening.ts,
// plus whatever authentication took), one after. No HTTP here: refusals and failures are
// the domain errors of ./errors.ts, which the edge maps to statuses. The models that may
// answer are model-chain.ts's; how long a call may go quiet, deadline.ts's.
// ---------------------------------------------------------------------------------------

/** What the opening batch charged: the hold, and the day's credits right after it. */
export interface Charge extends HeldCharge {
  at: Date;
  used: number;
  allowance: number;
}

/**
 * The model's text as the service passes it on: U+0000 becomes U+FFFD (the replacement
 * character). The embedded libSQL driver reads text back cut at a NUL, so a reply holding
 * one would be stored shorter than it was streamed; replaced here, before it is streamed,
 * returned or stored, all three agree, and every other character passes unchanged.
 */
function fromModel(text: string): string {
  return text.replaceAll("\u0000", "\uFFFD");
}

/** Sampling settings for the model, its tools and response format, and a listener told how its reply ended (finish reason, usage). */
export type ModelCallOptions = Pick<ModelRequest, "sampling" | "onOutcome" | keyof ModelTooling>;

/**
 * What an exchange yields: `started` once a model has begun a streamed reply (naming the
 * model that answers), the reply's text and tool calls in pieces, then the stored reply
 * and the model that answered.
 */
export type ExchangeEvent<R> =
  | { type: "started"; model?: string }
  | { type: "delta"; text: string }
  | { type: "tool-call"; call: ToolCallDelta }
  | { type: "done"; reply: R; model?: string };

/** What the batch that stores an exchange holds besides its usage record, its hold and its replayable reply. */
export interface Settlement<R> {
  /** The caller's statements, e.g. its messages. */
  statements?: Step[];
  contextId: string | null;
  /** The stored reply the credits paid for, which the usage record names (its branch). */
  messageId?: string | null;
  reply: R;
}

export interface ExchangeRun<R> {
  /** What the model receives. */
  prompt: ChatMessage[];
  /** Aborts the exchange: the client went away. */
  signal: AbortSignal;
  /** Streamed from the model piece by piece, or asked for whole (one delta). */
  stream: boolean;
  callOptions?: ModelCallOptions;
  /** What to store for the whole reply of `model`, the model that answered. */
  settle(text: string, model: RegisteredModel): Settlement<R> | Promise<Settlement<R>>;
  /** An error that says better than a 500 why the exchange could not be stored, if any. */
  explainStoreFailure?(err: unknown): DomainError | undefined;
}

/** A failure before the first token that the next model of the chain may answer instead: the provider down, a 5xx, a 429, a timeout. */
function fallsBack(err: unknown, deadline: Deadline): boolean {
  if (deadline.timedOut) return true;
  if (deadline.signal.aborted) return false;
  if (!(err instanceof UpstreamError) || err.credentialsRejected) return false;
  return err.status === undefined || err.status === 429 || err.status >= 500;
}

/** How long the answering model took, for GET /models' measured speed. */
interface Timing {
  startedAt: number;
  firstTokenAt: number | null;
}

/**
 * A charged exchange, owned from the debit to the end: `run` calls the model (and, when
 * its provider fails before the first token, its fallbacks in turn), yields its reply and
 * stores it. It ends exactly once: stored (one batch, which settles the hold at the price
 * of the model that answered), or released (one batch: refund, key, hold) on a failure, a
 * timeout, the signal, or the caller no longer iterating.
 */
export class Exchange {
  #ended = false;

  constructor(
    private readonly deps: ChatDeps,
    /** The model asked for, then the fallbacks that may answer in its place. */
    private readonly chain: RegisteredModel[],
    private readonly charge: Charge,
    private readonly claim: IdempotencyClaim | undefined,
    private readonly requestId: string,
  ) {}

  /** The model asked for. */
  get model(): RegisteredModel {
    return this.chain[0]!;
  }

  /** The smallest context window of the models that may answer: the prompt must fit each. */
  get contextWindow(): number {
    return Math.min(...this.chain.map((m) => m.contextWindow));
  }

  /** The day's credits once the hold is settled at the price of `modelId` (a model of the chain). */
  creditsAfter(modelId: string): Credits {
    const model = this.chain.find((m) => m.id === modelId) ?? this.model;
    const refunded = Math.max(this.charge.credits - model.credits, 0);
    const credits = this.credits;
    return { ...credits, used: credits.used - refunded, remaining: credits.remaining + refunded };
  }

  /** The day's credits after this exchange's debit. */
  get credits(): Credits {
    return creditsFor(this.charge.day, this.charge.used, this.charge.allowance);
  }

  /** When the message was charged: the user message's time. */
  get at(): Date {
    return this.charge.at;
  }

  /**
   * Runs the exchange once: yields `started` (streams only), the deltas, then `done`
   * with the reply once it is stored. Failures are thrown as DomainErrors, with the charge
   * already released; a caller that stops iterating early releases it too.
   */
  async *run<R>(run: ExchangeRun<R>): AsyncGenerator<ExchangeEvent<R>, void, undefined> {
    if (this.#ended) throw new Error("this exchange has already run");
    let outcome: ModelOutcome = {};
    const onOutcome = (o: ModelOutcome) => {
      outcome = o;
      run.callOptions?.onOutcome?.(o);
    };
    let deadline: Deadline | undefined;
    let answered = false;
    // The hold is a lease (holds.ts): renewed while the model answers, however long its
    // reply streams, so that no other request takes it for abandoned. A short exchange
    // ends before the first renewal and costs no statement.
    const renewal = setInterval(() => {
      renewHold(this.deps.db, this.charge.holdId, this.deps.now()).catch((err) =>
        this.deps.log.warn("could not renew a credit hold", { requestId: this.requestId, holdId: this.charge.holdId, err }),
      );
    }, renewalInterval(this.deps.config));
    try {
      let text = "";
      const cap = replyCap(this.deps.config.MAX_REPLY_CHARS);
      let model: RegisteredModel;
      let timing: Timing;
      try {
        // Each model of the chain in turn, until one begins its reply: a failure before the
        // first token goes to the next (within the same hold), one after it is the error.
        let first: IteratorResult<StreamPiece> | undefined;
        let pieces: AsyncIterator<StreamPiece> | undefined;
        for (let i = 0; ; i++) {
          model = this.chain[i]!;
          deadline = createDeadline(this.deps.config.MODEL_TIMEOUT_MS, run.signal);
          const request = { ...run.callOptions, onOutcome, messages: run.prompt, signal: deadline.signal };
          timing = { startedAt: performance.now(), firstTokenAt: null };
          try {
            if (run.stream) {
              pieces = (await model.adapter!.stream(request))[Symbol.asyncIterator]();
              deadline.touch();
              first = await pieces.next();
              timing.firstTokenAt = performance.now();
            } else {
              text = cap.take(fromModel(await model.adapter!.complete(request)));
            }
            break;
          } catch (err) {
            if (i + 1 < this.chain.length && fallsBack(err, deadline)) {
              deadline.clear();
              this.deps.log.warn("chat model failed before its first token; its fallback answers", {
                requestId: this.requestId,
                model: model.id,
                fallback: this.chain[i + 1]!.id,
                err,
              });
              continue;
            }
            throw err;
          }
        }
        if (run.stream) {
          yield { type: "started", model: model.id };
          for (let next = first!; !next.done; next = await pieces!.next()) {
            deadline.touch();
            const piece = next.value;
            if (typeof piece !== "string") {
              yield { type: "tool-call", call: piece.toolCall };
              continue;
            }
            const delta = cap.take(fromModel(piece));
            text += delta;
            yield { type: "delta", text: delta };
            if (cap.cut) {
              // MAX_REPLY_CHARS: the rest is not read; the model's call ends here.
              deadline.stop(new DOMException("the reply reached MAX_REPLY_CHARS", "AbortError"));
              void pieces!.return?.(undefined)?.catch(() => {});
              break;
            }
          }
        }
        answered = true;
      } catch (err) {
        throw await this.#fail(err, deadline!, model!);
      } finally {
        deadline?.clear();
      }
      if (!run.stream) yield { type: "delta", text };
      const measured = {
        model: model.id,
        at: this.charge.at,
        firstTokenMs: timing.firstTokenAt === null ? null : Math.round(timing.firstTokenAt - timing.startedAt),
        durationMs: Math.round(performance.now() - timing.startedAt),
        outputTokens: outcome.usage?.completionTokens ?? estimateOutputTokens(text, outcome),
      };
      // The model finished: the exchange is complete and is stored, whether or not the
      // client is still there to read the end of it.
      const settlement = await run.settle(text, model);
      try {
        await this.#store(settlement, model, measured);
      } catch (err) {
        throw run.explainStoreFailure?.(err) ?? err;
      }
      yield { type: "done", reply: settlement.reply, model: model.id };
    } finally {
      clearInterval(renewal);
      // Stopped when the caller stops iterating, so the upstream call ends with it. Once
      // the model has answered there is no call left to stop (and an abort costs an
      // exception object and its listeners on every message).
      if (!answered) deadline?.stop(new DOMException("the caller stopped reading the reply", "AbortError"));
      await this.#release("the reply was not read to its end");
    }
  }

  /**
   * Stores the exchange in one batch that also settles its hold at the answering model's
   * price: the caller's statements, the usage record, the model's timing and, with an
   * Idempotency-Key, the reply for replays. If the batch fails, the charge is released and
   * the error rethrown.
   */
  async #store(settlement: Settlement<unknown>, model: RegisteredModel, timing: ExchangeTiming): Promise<void> {
    const { db } = this.deps;
    const hold = settleHoldStatements(db, this.charge, model.credits);
    const batch = new Batch();
    for (const s of [...hold.first, ...(settlement.statements ?? [])]) batch.add(s);
    batch.add(
      usageEventStatement(db, {
        id: timeOrderedId("use"),
        userId: this.charge.userId,
        at: this.charge.at,
        model: model.id,
        contextId: settlement.contextId,
        messageId: settlement.messageId ?? null,
        credits: model.credits,
      }),
    );
    batch.add(timingStatement(db, timing));
    if (this.claim) batch.add(step(finishClaimStatement(db, this.claim, this.deps.now(), { status: 200, body: settlement.reply })));
    batch.add(hold.last);
    try {
      await batch.run(db);
      this.#ended = true;
    } catch (err) {
      await this.#release("the exchange could not be stored");
      throw err;
    }
  }

  /** Releases the hold (refunds it) and the key, once; nothing after the exchange ended. */
  async #release(reason: string): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    const { db, log } = this.deps;
    const { userId, day, credits } = this.charge;
    const batch = new Batch();
    for (const s of releaseHoldStatements(db, this.charge)) batch.add(s);
    if (this.claim) batch.add(step(releaseClaimStatement(db, this.claim)));
    try {
      await batch.run(db);
      log.info("chat charge refunded", { requestId: this.requestId, userId, day, credits, reason });
    } catch (err) {
      log.error("could not refund a chat charge", { requestId: this.requestId, userId, day, credits, reason, err });
    }
  }

  /** Releases, logs the cause with the request id, and returns the error for the client. */
  async #fail(err: unknown, deadline: Deadline, answering: RegisteredModel): Promise<DomainError> {
    // Named for the model asked for; the log says which of its chain failed last.
    const model = this.model.id;
    const ms = this.deps.config.MODEL_TIMEOUT_MS;
    const limit = ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
    if (!deadline.timedOut && deadline.signal.aborted) {
      // The client's own doing, not the model's: said so in the log and the refund's reason.
      this.deps.log.info("chat cancelled by the client", { requestId: this.requestId, model });
      await this.#release("cancelled by the client");
      return new ExchangeCancelled();
    }
    let error: DomainError;
    if (deadline.timedOut) error = new ModelTimedOut(model, limit);
    else if (err instanceof UpstreamError && err.credentialsRejected) {
      error = new ModelUnavailable(`model ${model} is not reachable: its provider refused this server's credentials; nothing was charged`, "model_unreachable");
    } else error = new ModelFailed(model);
    this.deps.log.warn("chat model call failed", { requestId: this.requestId, model, answering: answering.id, code: error.code, err });
    await this.#release(`model call failed (${error.code})`);
    return error;
  }
}

/** Output tokens when the provider does not count them: about 3 characters a token, tool calls included. */
function estimateOutputTokens(text: string, outcome: ModelOutcome): number {
  const calls = (outcome.toolCalls ?? []).reduce((sum, c) => sum + c.name.length + c.arguments.length, 0);
  return Math.ceil((text.length + calls) / 3);
}

/**
 * A message's exchange as the routes see it, a stored reply replayed or a live exchange
 * alike: they only put its events on the wire.
 */
export interface Turn<R> {
  /** A replay of the first reply to the same Idempotency-Key: nothing charged, no model call. */
  replayed: boolean;
  /** The day's credits after the charge (for a replay: as its reply said). */
  credits: Pick<Credits, "remaining" | "resetAt">;
  /** The day's credits once the charge is settled at the price of the model that answered. */
  creditsAfter?(model: string): Pick<Credits, "remaining" | "resetAt">;
  /**
   * The reply, to iterate to the end; stopping early releases a live exchange. Call it
   * once, and iterate what it returns: an exchange never run stays charged until its
   * hold goes stale.
   */
  events(signal: AbortSignal, stream: boolean): AsyncGenerator<ExchangeEvent<R>, void, undefined>;
}

/** A stored reply, as the events a live exchange would have yielded. */
export function replayTurn<R>(reply: R, text: string, credits: Pick<Credits, "remaining" | "resetAt">, model?: string): Turn<R> {
  return {
    replayed: true,
    credits,
    async *events(_signal, stream) {
      if (stream) yield { type: "started", model };
      yield { type: "delta", text };
      yield { type: "done", reply, model };
    },
  };
}
