import type { BlobStore } from "../../platform/blob-store";
import { timeOrderedId } from "../../platform/encoding";
import type { Config } from "../../platform/config";
import { Batch, step, type Db, type Step } from "../../platform/db";
import type { DomainError } from "../../platform/errors";
import type { Logger } from "../../platform/log";
import type { ExchangeOutcome, Metrics } from "../../platform/metrics";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { creditsFor, type Credits } from "../account/credits";
import { usageStatements } from "../account/usage";
import { ExchangeCancelled, ModelFailed, ModelTimedOut, ModelUnavailable } from "./errors";
import { releaseHoldStatements, renewalInterval, renewHold, settleHoldStatements, type HeldCharge } from "./holds";
import { finishClaimStatement, releaseClaimStatement, type IdempotencyClaim } from "./idempotency";
import { callModel, ModelCallFailed, type ModelAnswer, type ModelCall, type ModelEvent } from "./model-call";
import { timingStatement } from "./model-speed";

// ---------------------------------------------------------------------------------------
// A charged exchange, from the debit to its end. The opening batch (opening.ts) debits and
// holds the price; `answer` calls the model (model-call.ts) while renewing the hold; then
// the caller stores the exchange with `store` (one batch that settles the hold), or the
// charge is released (refunded) by `answer` itself when the model fails, times out or the
// caller stops reading. It ends exactly once. Round trips: the opening batch before the
// model call, one batch after. No HTTP here: failures are the domain errors of errors.ts.
// ---------------------------------------------------------------------------------------

/** What the chat services need from the runtime. */
export interface ChatDeps {
  db: Db;
  config: Config;
  models: ModelRegistry;
  now: () => Date;
  log: Logger;
  /** Attachments' bytes, read into the prompt of a message that carries images. */
  blobs?: BlobStore;
  /** What the operator's monitoring counts: each exchange's end, first token, credits and upstream errors. */
  metrics: Metrics;
}

/** What the opening batch charged: the hold, and the day's credits right after it. */
export interface Charge extends HeldCharge {
  at: Date;
  used: number;
  allowance: number;
  /** The API key that asked, if one did: its usage is counted against its own limit. */
  keyId: string | null;
  /** Charged to the granted credits (`day` is GRANT_DAY): the day's credits as they stand, for the reply. */
  shown?: { day: string; used: number; allowance: number };
}

/** A charged exchange: the models that may answer, the charge, the Idempotency-Key it claimed. */
export interface Exchange {
  /** The model asked for, then the fallbacks that may answer in its place. */
  chain: RegisteredModel[];
  charge: Charge;
  claim?: IdempotencyClaim;
  requestId: string;
  /** Set once the exchange is stored or released: it ends exactly once. */
  ended: boolean;
}

/** The model asked for. */
export const askedModel = (exchange: Exchange): RegisteredModel => exchange.chain[0]!;

/** The smallest context window of the models that may answer: the prompt must fit each. */
export const contextWindowOf = (exchange: Exchange): number => Math.min(...exchange.chain.map((m) => m.contextWindow));

/** The day's credits right after the debit. */
export function creditsOf(exchange: Exchange): Credits {
  const { day, used, allowance } = exchange.charge.shown ?? exchange.charge;
  return creditsFor(day, used, allowance);
}

/** The day's credits once the hold is settled at the price of `modelId` (a model of the chain). */
export function creditsAfter(exchange: Exchange, modelId: string): Credits {
  const model = exchange.chain.find((m) => m.id === modelId) ?? askedModel(exchange);
  const refunded = Math.max(exchange.charge.credits - model.credits, 0);
  const credits = creditsOf(exchange);
  // A difference given back to the grant leaves the day as it was.
  if (exchange.charge.shown) return credits;
  return { ...credits, used: credits.used - refunded, remaining: credits.remaining + refunded };
}

export type AnswerRequest = Pick<ModelCall, "prompt" | "signal" | "stream" | "options">;

/**
 * Calls the model for a charged exchange and yields its reply as it comes; returns it
 * whole, still charged, for the caller to `store`. On a failure, a timeout, a cancel or a
 * caller that stops reading, releases the charge (and throws the domain error).
 */
export async function* answer(deps: ChatDeps, exchange: Exchange, request: AnswerRequest): AsyncGenerator<ModelEvent, ModelAnswer, undefined> {
  // The hold is a lease (holds.ts): renewed while the model answers, however long its
  // reply streams, so that no other request takes it for abandoned. A short exchange ends
  // before the first renewal and costs no statement.
  const renewal = setInterval(() => {
    renewHold(deps.db, exchange.charge.holdId, deps.now()).catch((err) =>
      deps.log.warn("could not renew a credit hold", { requestId: exchange.requestId, holdId: exchange.charge.holdId, err }),
    );
  }, renewalInterval(deps.config));
  let answered = false;
  try {
    const whole = yield* callModel(deps, { ...request, chain: exchange.chain, at: exchange.charge.at, requestId: exchange.requestId });
    answered = true;
    return whole;
  } catch (err) {
    if (!(err instanceof ModelCallFailed)) throw err;
    const error = failureError(deps, exchange, err);
    const cancelled = error instanceof ExchangeCancelled;
    // A model's failure is counted (GET /admin/usage's failed exchanges), uncharged, with the refund.
    await release(deps, exchange, cancelled ? "cancelled by the client" : `model call failed (${error.code})`, cancelled ? [] : failureRecord(deps, exchange, err), {
      model: err.answering.id,
      outcome: FAILURE_OUTCOMES[err.why],
    });
    throw error;
  } finally {
    clearInterval(renewal);
    if (!answered) await release(deps, exchange, "the reply was not read to its end");
  }
}

/** What the batch that stores an exchange holds besides its usage record, its hold and its replayable reply. */
export interface Stored<R> {
  /** The caller's statements, e.g. its messages. */
  statements: Step[];
  contextId: string | null;
  /** The stored reply the credits paid for, which the usage record names (its branch). */
  messageId: string | null;
  /** The reply, kept for a retry with the same Idempotency-Key. */
  reply: R;
}

/**
 * Stores the exchange in one batch that also settles its hold at the answering model's
 * price: the caller's statements, the usage record, the model's timing and, with an
 * Idempotency-Key, the reply for replays. If the batch fails, the charge is released and
 * the error rethrown.
 */
export async function store<R>(deps: ChatDeps, exchange: Exchange, whole: ModelAnswer, stored: Stored<R>): Promise<void> {
  const { db } = deps;
  const { model } = whole;
  const hold = settleHoldStatements(db, exchange.charge, model.credits);
  const batch = new Batch();
  for (const s of [...hold.first, ...stored.statements]) batch.add(s);
  const usage = usageStatements(db, {
    id: timeOrderedId("use"),
    userId: exchange.charge.userId,
    at: exchange.charge.at,
    model: model.id,
    contextId: stored.contextId,
    messageId: stored.messageId,
    credits: model.credits,
    kind: "message",
    keyId: exchange.charge.keyId,
    firstTokenMs: whole.timing.firstTokenMs ?? null,
    inputTokens: whole.tokens.input,
    outputTokens: whole.tokens.output,
    tokensEstimated: whole.tokens.estimated,
  }, deps.now());
  for (const s of usage) batch.add(s);
  batch.add(timingStatement(db, whole.timing));
  if (exchange.claim) batch.add(step(finishClaimStatement(db, exchange.claim, deps.now(), { status: 200, body: stored.reply })));
  batch.add(hold.last);
  try {
    await batch.run(db);
    exchange.ended = true;
    deps.metrics.exchange(model.id, whole.stopped ? "stopped" : "ok");
    deps.metrics.creditsSpent(model.id, model.credits);
  } catch (err) {
    await release(deps, exchange, "the exchange could not be stored");
    throw err;
  }
}

/** The usage record of a failed model call: no credits, no tokens. */
function failureRecord(deps: ChatDeps, exchange: Exchange, failed: ModelCallFailed): Step[] {
  const { userId, at, keyId } = exchange.charge;
  return usageStatements(deps.db, {
    id: timeOrderedId("use"),
    userId,
    at,
    model: failed.answering.id,
    contextId: null,
    messageId: null,
    credits: 0,
    kind: "message",
    keyId,
    outcome: "failed",
    inputTokens: 0,
    outputTokens: 0,
    tokensEstimated: false,
  }, deps.now());
}

/** How a failed model call's exchange ends, for the metrics. */
const FAILURE_OUTCOMES: Record<ModelCallFailed["why"], ExchangeOutcome> = { failed: "failed", timeout: "timeout", credentials: "unreachable", cancelled: "cancelled" };

/**
 * Releases the hold (refunds it) and the key, once; nothing after the exchange ended.
 * `statements` join the same batch: what an uncharged reply stores (a stopped or failed
 * reply in the background, a failed call's usage record). Failing, it is logged, and the
 * hold goes stale (refunded later). `ended`: how the metrics count it (default: the model
 * asked for, refunded).
 */
export async function release(
  deps: ChatDeps,
  exchange: Exchange,
  reason: string,
  statements: Step[] = [],
  ended: { model: string; outcome: ExchangeOutcome } = { model: askedModel(exchange).id, outcome: "refunded" },
): Promise<void> {
  if (exchange.ended) return;
  exchange.ended = true;
  deps.metrics.exchange(ended.model, ended.outcome);
  const { db, log } = deps;
  const { userId, day, credits } = exchange.charge;
  const batch = new Batch();
  for (const s of statements) batch.add(s);
  for (const s of releaseHoldStatements(db, exchange.charge)) batch.add(s);
  if (exchange.claim) batch.add(step(releaseClaimStatement(db, exchange.claim)));
  try {
    await batch.run(db);
    log.info("chat charge refunded", { requestId: exchange.requestId, userId, day, credits, reason });
  } catch (err) {
    log.error("could not refund a chat charge", { requestId: exchange.requestId, userId, day, credits, reason, err });
  }
}

/** The error a failed model call is for the client, logged with the request id. Named for the model asked for. */
function failureError(deps: ChatDeps, exchange: Exchange, failed: ModelCallFailed): DomainError {
  const model = askedModel(exchange).id;
  if (failed.why === "cancelled") {
    // The client's own doing, not the model's: said so in the log and the refund's reason.
    deps.log.info("chat cancelled by the client", { requestId: exchange.requestId, model });
    return new ExchangeCancelled();
  }
  const ms = deps.config.MODEL_TIMEOUT_MS;
  const error =
    failed.why === "timeout"
      ? new ModelTimedOut(model, ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`)
      : failed.why === "credentials"
        ? new ModelUnavailable(`model ${model} is not reachable: its provider refused this server's credentials; nothing was charged`, "model_unreachable")
        : new ModelFailed(model);
  deps.log.warn("chat model call failed", { requestId: exchange.requestId, model, answering: failed.answering.id, code: error.code, err: failed.cause });
  return error;
}
