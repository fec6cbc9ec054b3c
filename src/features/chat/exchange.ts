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
import { UpstreamError, type ChatMessage, type ModelRequest } from "../../platform/models/adapter";
import { DEFAULT_MODEL_ID } from "../../platform/models/catalog";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { creditDays, users, type StoredPreferences } from "../../../schema/index";
import { creditsFor, debitStatement, describeWait, secondsUntil, utcDay, type Credits } from "../account/credits";
import { HOLD_MARGIN_MS, holdStatement, releaseHoldStatements, releaseStaleStatements, settleHoldStatements, staleBefore, type HeldCharge } from "./holds";
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

/** The model a message goes to when the request names none: the user's default, else svc-70b. */
function defaultModelFor(models: ModelRegistry, storedDefault: string | undefined): RegisteredModel {
  return (storedDefault ? models.get(storedDefault) : undefined) ?? models.get(DEFAULT_MODEL_ID)!;
}

/**
 * The price of the user's default model in SQL (NULL when it is unavailable), for the
 * debit: a CASE over the registry's `count` models, whose ids and prices are placeholders
 * (see defaultPriceValues), so that the prepared debit serves any registry.
 */
function defaultModelPrice(count: number): SQL {
  const cases = Array.from({ length: count }, (_, i) => sql`when ${sql.placeholder(`model${i}`)} then ${sql.placeholder(`price${i}`)}`);
  return sql`(select case json_extract(preferences, '$.defaultModel') ${sql.join(cases, sql` `)} else ${sql.placeholder(
    "fallbackPrice",
  )} end from users where id = ${sql.placeholder("userId")})`;
}

function defaultPriceValues(models: ModelRegistry): Record<string, unknown> {
  const price = (m: RegisteredModel) => (m.available ? m.credits : null);
  const values: Record<string, unknown> = { fallbackPrice: price(models.get(DEFAULT_MODEL_ID)!) };
  models.list().forEach((m, i) => {
    values[`model${i}`] = m.id;
    values[`price${i}`] = price(m);
  });
  return values;
}

/** Which guards a debit carries, besides its price: each shape is one prepared statement. */
interface DebitShape {
  defaultModels: number;
  claim: boolean;
  context: boolean;
  message: boolean;
}

/**
 * The opening batch's statements, built once per handle (see perDb). The debit has a few
 * shapes: an explicit price or the default model's, with or without each guard; each is
 * built on first use.
 */
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
    const price = shape.defaultModels > 0 ? defaultModelPrice(shape.defaultModels) : sql`${sql.placeholder("price")}`;
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
    /** The debit and its hold. `defaultModels`: the registry's size when the price is the default model's, else 0. */
    debit(shape: DebitShape) {
      const key = `${shape.defaultModels}/${shape.claim}/${shape.context}/${shape.message}`;
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
  const shape = prepared.debit({ defaultModels: explicit ? 0 : models.list().length, claim: !!claim, context: contextId !== undefined, message: !!message });
  const values = {
    userId,
    day,
    allowance,
    ...(explicit ? { price: explicit.credits } : defaultPriceValues(models)),
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
  const charged = debited[0];
  if (charged) {
    const charge = { holdId, userId, day, at, credits: model.credits, used: charged.used, allowance };
    return { kind: "charged", exchange: new Exchange(deps, model, charge, claim, input.requestId), reads };
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
    if (model.credits > allowance) return new PriceOverAllowance(model.id, model.credits, allowance);
    const wait = secondsUntil(credits.resetAt, at);
    const left = credits.remaining === 0 ? `all ${allowance} of today's credits are used` : `model ${model.id} costs ${model.credits} credits and ${credits.remaining} remain today`;
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

/** Sampling settings for the model, and a listener told how its reply ended (finish reason, usage). */
export type ModelCallOptions = Pick<ModelRequest, "sampling" | "onOutcome">;

/** What an exchange yields: `started` once the model accepted a streamed request, the reply's text in pieces, then the stored reply. */
export type ExchangeEvent<R> = { type: "started" } | { type: "delta"; text: string } | { type: "done"; reply: R };

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
  /** What to store for the model's whole reply. */
  settle(text: string): Settlement<R> | Promise<Settlement<R>>;
  /** An error that says better than a 500 why the exchange could not be stored, if any. */
  explainStoreFailure?(err: unknown): DomainError | undefined;
}

/**
 * A charged exchange, owned from the debit to the end: `run` calls the model, yields its
 * reply and stores it. It ends exactly once: stored (one batch, which settles the hold),
 * or released (one batch: refund, key, hold) on a failure, a timeout, the signal, or the
 * caller no longer iterating.
 */
export class Exchange {
  #ended = false;

  constructor(
    private readonly deps: ChatDeps,
    readonly model: RegisteredModel,
    private readonly charge: Charge,
    private readonly claim: IdempotencyClaim | undefined,
    private readonly requestId: string,
  ) {}

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
    const deadline = createDeadline(this.deps.config.MODEL_TIMEOUT_MS, run.signal);
    const request = { ...run.callOptions, messages: run.prompt, signal: deadline.signal };
    let answered = false;
    try {
      let text = "";
      try {
        if (run.stream) {
          const upstream = await this.model.adapter!.stream(request);
          deadline.touch();
          yield { type: "started" };
          for await (const piece of upstream) {
            deadline.touch();
            const delta = fromModel(piece);
            text += delta;
            yield { type: "delta", text: delta };
          }
        } else {
          text = fromModel(await this.model.adapter!.complete(request));
        }
        answered = true;
      } catch (err) {
        throw await this.#fail(err, deadline);
      } finally {
        deadline.clear();
      }
      if (!run.stream) yield { type: "delta", text };
      // The model finished: the exchange is complete and is stored, whether or not the
      // client is still there to read the end of it.
      const settlement = await run.settle(text);
      try {
        await this.#store(settlement);
      } catch (err) {
        throw run.explainStoreFailure?.(err) ?? err;
      }
      yield { type: "done", reply: settlement.reply };
    } finally {
      // Stopped when the caller stops iterating, so the upstream call ends with it. Once
      // the model has answered there is no call left to stop (and an abort costs an
      // exception object and its listeners on every message).
      if (!answered) deadline.stop(new DOMException("the caller stopped reading the reply", "AbortError"));
      await this.#release("the reply was not read to its end");
    }
  }

  /**
   * Stores the exchange in one batch that also settles its hold: the caller's statements,
   * the usage record and, with an Idempotency-Key, the reply for replays. If the batch
   * fails, the charge is released and the error rethrown.
   */
  async #store(settlement: Settlement<unknown>): Promise<void> {
    const { db } = this.deps;
    const hold = settleHoldStatements(db, this.charge);
    const statements: Statement[] = [
      hold.first,
      ...(settlement.statements ?? []),
      usageEventStatement(db, {
        id: timeOrderedId("use"),
        userId: this.charge.userId,
        at: this.charge.at,
        model: this.model.id,
        contextId: settlement.contextId,
        messageId: settlement.messageId ?? null,
        credits: this.charge.credits,
      }),
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
  async #fail(err: unknown, deadline: Deadline): Promise<DomainError> {
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
    this.deps.log.warn("chat model call failed", { requestId: this.requestId, model, code: error.code, err });
    await this.#release(`model call failed (${error.code})`);
    return error;
  }
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
  /**
   * The reply, to iterate to the end; stopping early releases a live exchange. Call it
   * once, and iterate what it returns: an exchange never run stays charged until its
   * hold goes stale.
   */
  events(signal: AbortSignal, stream: boolean): AsyncGenerator<ExchangeEvent<R>, void, undefined>;
}

/** A stored reply, as the events a live exchange would have yielded. */
export function replayTurn<R>(reply: R, text: string, credits: Pick<Credits, "remaining" | "resetAt">): Turn<R> {
  return {
    replayed: true,
    credits,
    async *events(_signal, stream) {
      if (stream) yield { type: "started" };
      yield { type: "delta", text };
      yield { type: "done", reply };
    },
  };
}
