import { and, eq, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Principal } from "../../platform/auth/principal";
import { timeOrderedId } from "../../platform/encoding";
import type { Config } from "../../platform/config";
import { bound, perDb, type Db } from "../../platform/db";
import { excerpt, type DomainError } from "../../platform/errors";
import {
  CreditsUsedUp,
  ExchangeCancelled,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  ModelFailed,
  ModelNotFound,
  ModelTimedOut,
  ModelUnavailable,
  PriceOverAllowance,
} from "./errors";
import type { Logger } from "../../platform/log";
import {
  UpstreamError,
  type ChatMessage,
  type ModelOutcome,
  type ModelRequest,
  type ModelTooling,
  type StreamPiece,
  type ToolCallDelta,
} from "../../platform/models/adapter";
import { timingStatement, type ExchangeTiming } from "./model-speed";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { creditDays, users, type StoredPreferences } from "../../../schema/index";
import { creditsFor, debitStatement, describeWait, secondsUntil, utcDay, type Credits } from "../account/credits";
import {
  HOLD_MARGIN_MS,
  holdStatement,
  releaseHoldStatements,
  releaseStaleStatements,
  renewalInterval,
  renewHold,
  settleHoldStatements,
  staleBefore,
  type HeldCharge,
} from "./holds";
import {
  claimHeldGuard,
  claimState,
  claimStatement,
  finishClaimStatement,
  newClaim,
  readClaimStatement,
  releaseClaimStatement,
  type IdempotencyClaim,
} from "./idempotency";
import { usageEventStatement } from "../account/usage";
import { ensureUser } from "../../platform/auth/users";

/** What the chat services need from the runtime. */
export interface ChatDeps {
  db: Db;
  config: Config;
  models: ModelRegistry;
  now: () => Date;
  log: Logger;
}

export type Statement = BatchItem<"sqlite">;
type Batch = [Statement, ...Statement[]];

// ---------------------------------------------------------------------------------------
// The exchange core, from start to finish: debit and hold -> call the model -> store and
// settle the hold, or refund and release it. It knows messages, not contexts, so chat in
// a context (chat.ts) and OpenAI's completions (completions.ts) share it; the routes only
// put its events on the wire. Round trips: one batch before the model call (plus whatever
// authentication took), one after. No HTTP here: refusals and failures are the domain
// errors of ./errors.ts, which the edge maps to statuses.
// ---------------------------------------------------------------------------------------

/** The model a request names: 400 when unknown, 503 when not configured. No I/O. */
export function requireModel(models: ModelRegistry, id: string): RegisteredModel {
  const model = models.get(id);
  if (!model) {
    const available = models.list().filter((m) => m.available);
    const offered = (available.length > 0 ? available : models.list()).map((m) => m.id).join(", ");
    throw new ModelNotFound(`unknown model '${excerpt(id)}'; available models: ${offered}`);
  }
  if (!model.available) throw unavailable(model);
  return model;
}

function unavailable(model: RegisteredModel): ModelUnavailable {
  return new ModelUnavailable(`model ${model.id} is not configured on this server (the operator must ${model.setup}); choose another model from GET /models`);
}

/** The model a message goes to when the request names none: the user's default, else the deployment's. */
function defaultModelFor(models: ModelRegistry, storedDefault: string | undefined): RegisteredModel {
  return (storedDefault ? models.get(storedDefault) : undefined) ?? models.defaultModel()!;
}

/**
 * The models an exchange may be answered by, in order: the model, then those of its
 * fallbacks that are available and suit the request (`suits`: what it asks of them).
 */
export function answerChain(models: ModelRegistry, model: RegisteredModel, suits: (m: RegisteredModel) => boolean = () => true): RegisteredModel[] {
  const chain = [model];
  for (const id of model.fallbacks) {
    const fallback = models.get(id);
    if (fallback?.available && suits(fallback) && !chain.includes(fallback)) chain.push(fallback);
  }
  return chain;
}

/** What the debit holds for a chain: the highest price among the models that may answer; the settling batch gives back the rest. */
function holdPrice(chain: RegisteredModel[]): number {
  return Math.max(...chain.map((m) => m.credits));
}

/**
 * The hold of the user's default model in SQL (NULL when it is unavailable), for the
 * debit: looked up in a JSON object of every model's hold (one placeholder, whatever the
 * registry's size: D1 binds at most 100 values a statement), else `fallbackPrice` (the
 * deployment's default) when the preference names no model of the registry.
 */
function defaultModelPrice(): SQL {
  return sql`(select case when p.key is null then ${sql.placeholder("fallbackPrice")} else p.value end from users u left join json_each(${sql.placeholder(
    "prices",
  )}) p on p.key = json_extract(u.preferences, '$.defaultModel') where u.id = ${sql.placeholder("userId")})`;
}

function defaultPriceValues(models: ModelRegistry): Record<string, unknown> {
  const price = (m: RegisteredModel) => (m.available ? holdPrice(answerChain(models, m)) : null);
  return { fallbackPrice: price(models.defaultModel()!), prices: JSON.stringify(Object.fromEntries(models.list().map((m) => [m.id, price(m)]))) };
}

/**
 * The opening batch's statements, built once per handle (see perDb). The debit has a few
 * shapes: an explicit price or the default model's, with or without each guard; each is
 * built on first use.
 */
/** Which guards a debit carries, besides its price: each shape is one prepared statement. */
interface DebitShape {
  defaultModel: boolean;
  claim: boolean;
  context: boolean;
  message: boolean;
}

const openingStatements = perDb((db) => {
  const userId = sql.placeholder("userId");
  const debits = new Map<string, ReturnType<typeof prepareDebit>>();
  function prepareDebit(shape: DebitShape) {
    const guards: SQL[] = [];
    if (shape.claim) guards.push(claimHeldGuard({ userId, key: sql.placeholder("claimKey"), marker: sql.placeholder("claimMarker") }));
    if (shape.context) guards.push(sql`exists (select 1 from contexts where id = ${sql.placeholder("contextId")} and user_id = ${userId})`);
    // A reply of the context to follow or to answer again; in the second case it must answer a user message.
    if (shape.message) {
      guards.push(sql`exists (select 1 from messages m left join messages q on q.id = m.parent_id
        where m.id = ${sql.placeholder("messageId")} and m.context_id = ${sql.placeholder("contextId")} and m.user_id = ${userId}
          and m.role = 'assistant' and (${sql.placeholder("answersQuestion")} = 0 or q.role = 'user'))`);
    }
    const price = shape.defaultModel ? defaultModelPrice() : sql`${sql.placeholder("price")}`;
    const day = sql.placeholder("day");
    return {
      debit: debitStatement(db, { userId, day, price, allowance: sql.placeholder("allowance"), guards }).prepare(),
      // Right after the debit: the hold exists exactly when the debit charged.
      hold: holdStatement(db, {
        id: sql.placeholder("holdId"),
        userId,
        day,
        price,
        createdAtMs: sql.placeholder("createdAtMs"),
        claimKey: sql.placeholder("holdClaimKey"),
      }).prepare(),
    };
  }
  const [releaseRefund, releaseClaims, releaseHolds] = releaseStaleStatements(db, { userId, before: sql.placeholder("staleBefore") });
  return {
    /** The debit and its hold. `defaultModel`: the price is the user's default model's. */
    debit(shape: DebitShape) {
      const key = `${shape.defaultModel}/${shape.claim}/${shape.context}/${shape.message}`;
      let debit = debits.get(key);
      if (!debit) debits.set(key, (debit = prepareDebit(shape)));
      return debit;
    },
    /** The user's abandoned holds, released before the claim and the debit. */
    releaseStale: [releaseRefund.prepare(), releaseClaims.prepare(), releaseHolds.prepare()] as const,
    /** The day's total (to explain a refusal) and the preferences (the default model), in one read. */
    account: db
      .select({ used: creditDays.used, preferences: users.preferences })
      .from(users)
      .leftJoin(creditDays, and(eq(creditDays.userId, users.id), eq(creditDays.day, sql.placeholder("day"))))
      .where(eq(users.id, userId))
      .prepare(),
  };
});

/** What a caller adds to the opening batch (the chat route: its context). */
export interface OpeningExtension {
  /** A context the debit also requires to be the caller's. */
  contextId?: string;
  /**
   * A reply of that context the debit also requires: the one a message follows, or (with
   * `answersQuestion`) the one regenerated, which must answer a user message.
   */
  message?: { id: string; answersQuestion: boolean };
  /** Reads that join the opening batch; their results come back in order. */
  reads?: Statement[];
  /** When the debit was refused: an error that explains it better than 402, if any. */
  explainRefusal?(reads: unknown[]): DomainError | undefined;
}

export interface OpenExchangeInput {
  principal: Principal;
  /** The requested model; undefined: the user's default model, else svc-70b. */
  modelId?: string;
  /** An Idempotency-Key and a fingerprint of what the request asks for. */
  idempotency?: { key: string; fingerprint: string };
  requestId: string;
  extension?: OpeningExtension;
  /** What the request asks of a fallback (the OpenAI surface: tools, images); default: any. */
  suits?: (model: RegisteredModel) => boolean;
}

export type Opened =
  | { kind: "replay"; status: number; body: unknown }
  | { kind: "charged"; exchange: Exchange; reads: unknown[] };

/**
 * Opens an exchange in one batch: creates the user on first sight, claims the
 * idempotency key, debits the model's price, and runs the extension's reads. Throws
 * ApiError 402 (no credits), 409 (same key still running), 422 (same key, other request),
 * 503 (model not configured), or the extension's refusal; nothing stays charged then.
 */
export async function openExchange(deps: ChatDeps, input: OpenExchangeInput): Promise<Opened> {
  const { db, models, config } = deps;
  const { principal, extension } = input;
  const userId = principal.userId;
  const at = deps.now();
  const day = utcDay(at);
  const allowance = config.DAILY_CREDITS;
  const explicit = input.modelId === undefined ? undefined : requireModel(models, input.modelId);
  if (!explicit && !models.defaultModel()) {
    throw new ModelUnavailable("no model is configured on this server yet: the operator must set MODELS or a provider's variables (docs/chat.md); nothing was charged");
  }
  const holdId = timeOrderedId("hold");
  const claim = input.idempotency && newClaim(userId, input.idempotency.key, input.idempotency.fingerprint, holdId);

  const statements: Statement[] = [];
  const add = (statement: Statement) => statements.push(statement) - 1;
  const user = ensureUser(db, principal, at);
  if (user) add(user);
  const prepared = openingStatements(db);
  // The holds of this user's exchanges that died are released first, so that their
  // credits and their Idempotency-Keys are free for this one.
  const stale = { userId, staleBefore: staleBefore(config, at).getTime() };
  for (const release of prepared.releaseStale) add(bound(release, stale));
  if (claim) add(claimStatement(db, claim, at, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS));
  const contextId = extension?.contextId;
  const message = extension?.message;
  const shape = prepared.debit({ defaultModel: !explicit, claim: !!claim, context: contextId !== undefined, message: !!message });
  const values = {
    userId,
    day,
    allowance,
    ...(explicit ? { price: holdPrice(answerChain(models, explicit, input.suits)) } : defaultPriceValues(models)),
    ...(claim && { claimKey: claim.key, claimMarker: claim.marker }),
    ...(contextId !== undefined && { contextId }),
    ...(message && { messageId: message.id, answersQuestion: message.answersQuestion ? 1 : 0 }),
  };
  const debitAt = add(bound(shape.debit, values));
  add(bound(shape.hold, { ...values, holdId, createdAtMs: at.getTime(), holdClaimKey: claim ? claim.key : null }));
  const accountAt = add(bound(prepared.account, { userId, day }));
  const claimAt = claim ? add(readClaimStatement(db, claim)) : -1;
  const readsFrom = statements.length;
  for (const read of extension?.reads ?? []) add(read);

  const results = (await db.batch(statements as Batch)) as unknown[];
  const debited = results[debitAt] as Array<{ used: number }>;
  const reads = results.slice(readsFrom);

  if (claim) {
    const state = claimState((results[claimAt] as Array<{ status: number; body: string }>)[0], claim);
    if (state.kind === "replay") return state;
    if (state.kind === "in-progress") throw new IdempotencyKeyInUse();
    if (state.kind === "mismatch") throw new IdempotencyKeyReused();
  }

  const account = (results[accountAt] as Array<{ used: number | null; preferences: StoredPreferences }>)[0];
  const model = explicit ?? defaultModelFor(models, account?.preferences.defaultModel);
  const chain = model.available ? answerChain(models, model, input.suits) : [model];
  const charged = debited[0];
  if (charged) {
    const charge = { holdId, userId, day, at, credits: holdPrice(chain), used: charged.used, allowance };
    return { kind: "charged", exchange: new Exchange(deps, chain, charge, claim, input.requestId), reads };
  }

  // Refused: give the key back, then say why, most specific reason first.
  if (claim) await releaseClaimStatement(db, claim);
  throw refusal();

  function refusal(): DomainError {
    if (!model.available) return unavailable(model);
    const explained = extension?.explainRefusal?.(reads);
    if (explained) return explained;
    const used = account?.used ?? 0;
    const credits = creditsFor(day, used, allowance);
    const held = holdPrice(chain);
    if (held > allowance) return new PriceOverAllowance(model.id, held, allowance);
    const wait = secondsUntil(credits.resetAt, at);
    const costs = held > model.credits ? `${model.credits} credits (${held} are held in case a fallback answers)` : `${model.credits} credits`;
    const left = credits.remaining === 0 ? `all ${allowance} of today's credits are used` : `model ${model.id} costs ${costs} and ${credits.remaining} remain today`;
    return new CreditsUsedUp(`insufficient credits: ${left}; they return at 00:00 UTC (${credits.resetAt}, in ${describeWait(wait)})`, credits, wait);
  }
}

interface Charge extends HeldCharge {
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

/**
 * The model call's signal: aborted by a timeout that restarts whenever the upstream makes
 * progress, by the caller's signal, or by `stop`. One controller for all three: on Node 20
 * each AbortSignal (and AbortSignal.any) costs a few µs of a message's CPU.
 */
function createDeadline(ms: number, caller: AbortSignal) {
  const controller = new AbortController();
  let timedOut = false;
  const fire = () => {
    if (controller.signal.aborted) return;
    timedOut = true;
    controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  };
  const callerAborted = () => controller.abort(caller.reason);
  if (caller.aborted) callerAborted();
  else caller.addEventListener("abort", callerAborted, { once: true });
  let handle = setTimeout(fire, ms);
  return {
    signal: controller.signal,
    touch() {
      clearTimeout(handle);
      if (!controller.signal.aborted) handle = setTimeout(fire, ms);
    },
    /** The call is over: no timeout, and the caller's signal is let go. */
    clear() {
      clearTimeout(handle);
      caller.removeEventListener("abort", callerAborted);
    },
    stop: (reason: unknown) => controller.abort(reason),
    get timedOut() {
      return timedOut;
    },
  };
}
type Deadline = ReturnType<typeof createDeadline>;

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
  statements?: Statement[];
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
              text = fromModel(await model.adapter!.complete(request));
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
            const delta = fromModel(piece);
            text += delta;
            yield { type: "delta", text: delta };
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
    const statements: Statement[] = [
      ...hold.first,
      ...(settlement.statements ?? []),
      usageEventStatement(db, {
        id: timeOrderedId("use"),
        userId: this.charge.userId,
        at: this.charge.at,
        model: model.id,
        contextId: settlement.contextId,
        messageId: settlement.messageId ?? null,
        credits: model.credits,
      }),
      timingStatement(db, timing),
    ];
    if (this.claim) statements.push(finishClaimStatement(db, this.claim, this.deps.now(), { status: 200, body: settlement.reply }));
    statements.push(hold.last);
    try {
      await db.batch(statements as Batch);
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
    const statements: Statement[] = [...releaseHoldStatements(db, this.charge)];
    if (this.claim) statements.push(releaseClaimStatement(db, this.claim));
    try {
      await db.batch(statements as Batch);
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
