import { and, asc, desc, eq, lte, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Principal } from "../auth/credentials";
import { randomId, sha256Hex } from "../auth/encoding";
import type { Config } from "../config";
import { bound, perDb, type Db } from "../db";
import { ApiError } from "../errors";
import type { Logger } from "../log";
import { UpstreamError, type ChatMessage, type ModelRequest } from "../models/adapter";
import { DEFAULT_MODEL_ID } from "../models/catalog";
import type { ModelRegistry, RegisteredModel } from "../models/registry";
import { contexts, creditDays, messages, users, type StoredPreferences } from "../../schema/index";
import {
  creditsFor,
  debitStatement,
  describeWait,
  secondsUntil,
  utcDay,
  type Credits,
} from "./credits";
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
import { HOLD_MARGIN_MS, holdStatement, releaseHoldStatements, releaseStaleStatements, settleHoldStatements, staleBefore, type HeldCharge } from "./holds";
import { usageEventStatement } from "./usage";
import { ensureUser } from "./users";

/** What the chat services need from the runtime. */
export interface ChatDeps {
  db: Db;
  config: Config;
  models: ModelRegistry;
  now: () => Date;
  log: Logger;
}

type Statement = BatchItem<"sqlite">;
type Batch = [Statement, ...Statement[]];

// ---------------------------------------------------------------------------------------
// The exchange core: debit -> call the model -> settle or refund. It knows messages, not
// contexts, so the chat route and the OpenAI-compatible surface share it. Round trips:
// one batch before the model call (plus whatever authentication took), one after.
// ---------------------------------------------------------------------------------------

/** The model a request names: 400 when unknown, 503 when not configured. No I/O. */
export function requireModel(models: ModelRegistry, id: string): RegisteredModel {
  const model = models.get(id);
  if (!model) {
    const available = models.list().filter((m) => m.available);
    const offered = (available.length > 0 ? available : models.list()).map((m) => m.id).join(", ");
    throw new ApiError(400, `unknown model '${id}'; available models: ${offered}`);
  }
  if (!model.available) throw unavailable(model);
  return model;
}

function unavailable(model: RegisteredModel): ApiError {
  return new ApiError(503, `model ${model.id} is not configured on this server (the operator must ${model.setup}); choose another model from GET /models`);
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

/**
 * The opening batch's statements, built once per handle (see perDb). The debit has a few
 * shapes: an explicit price or the default model's, with or without each guard; each is
 * built on first use.
 */
const openingStatements = perDb((db) => {
  const userId = sql.placeholder("userId");
  const debits = new Map<string, ReturnType<typeof prepareDebit>>();
  function prepareDebit(shape: { defaultModels: number; claim: boolean; context: boolean }) {
    const guards: SQL[] = [];
    if (shape.claim) guards.push(claimHeldGuard({ userId, key: sql.placeholder("claimKey"), marker: sql.placeholder("claimMarker") }));
    if (shape.context) guards.push(sql`exists (select 1 from contexts where id = ${sql.placeholder("contextId")} and user_id = ${userId})`);
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
    debit(shape: { defaultModels: number; claim: boolean; context: boolean }) {
      const key = `${shape.defaultModels}/${shape.claim}/${shape.context}`;
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
  /** Reads that join the opening batch; their results come back in order. */
  reads?: Statement[];
  /** When the debit was refused: an error that explains it better than 402, if any. */
  explainRefusal?(reads: unknown[]): ApiError | undefined;
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
  const holdId = randomId("hold");
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
  const shape = prepared.debit({ defaultModels: explicit ? 0 : models.list().length, claim: !!claim, context: contextId !== undefined });
  const values = {
    userId,
    day,
    allowance,
    ...(explicit ? { price: explicit.credits } : defaultPriceValues(models)),
    ...(claim && { claimKey: claim.key, claimMarker: claim.marker }),
    ...(contextId !== undefined && { contextId }),
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
    if (state.kind === "in-progress") {
      throw new ApiError(409, "a request with this Idempotency-Key is still being answered; retry in a few seconds to get its reply", {
        "Retry-After": "2",
      });
    }
    if (state.kind === "mismatch") {
      throw new ApiError(422, "this Idempotency-Key was already used for a different request; send a new key for a new message");
    }
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

  function refusal(): ApiError {
    if (!model.available) return unavailable(model);
    const explained = extension?.explainRefusal?.(reads);
    if (explained) return explained;
    const used = account?.used ?? 0;
    const credits = creditsFor(day, used, allowance);
    if (model.credits > allowance) {
      return new ApiError(402, `insufficient credits: model ${model.id} costs ${model.credits} credits per message, more than the daily allowance of ${allowance}; choose another model`);
    }
    const wait = secondsUntil(credits.resetAt, at);
    const left = credits.remaining === 0 ? `all ${allowance} of today's credits are used` : `model ${model.id} costs ${model.credits} credits and ${credits.remaining} remain today`;
    return new ApiError(402, `insufficient credits: ${left}; they return at 00:00 UTC (${credits.resetAt}, in ${describeWait(wait)})`, {
      "Retry-After": String(wait),
      ...creditHeaders(credits),
    });
  }
}

/** X-Credits-Remaining and X-Credits-Reset for a reply. */
export function creditHeaders(credits: Pick<Credits, "remaining" | "resetAt">): Record<string, string> {
  return { "X-Credits-Remaining": String(credits.remaining), "X-Credits-Reset": credits.resetAt };
}

interface Charge extends HeldCharge {
  at: Date;
  used: number;
  allowance: number;
}

/** A timeout that restarts whenever the upstream makes progress, merged with the client's signal. */
function createDeadline(ms: number, client: AbortSignal) {
  const timer = new AbortController();
  const fire = () => timer.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  let handle = setTimeout(fire, ms);
  return {
    signal: AbortSignal.any([client, timer.signal]),
    touch() {
      clearTimeout(handle);
      if (!timer.signal.aborted) handle = setTimeout(fire, ms);
    },
    clear: () => clearTimeout(handle),
    get timedOut() {
      return timer.signal.aborted && !client.aborted;
    },
  };
}
type Deadline = ReturnType<typeof createDeadline>;

/** Sampling settings for the model, and a listener told how its reply ended (finish reason, usage). */
export type ModelCallOptions = Pick<ModelRequest, "sampling" | "onOutcome">;

/**
 * A charged exchange. It ends exactly once: `settle` stores it (one batch), or a failure,
 * a timeout, the client leaving or `abandon` refunds the charge and releases the key (one
 * batch). Calls after the end do nothing.
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

  /** The model's whole reply. On failure the charge is refunded and an ApiError thrown. */
  async complete(prompt: ChatMessage[], signal: AbortSignal, options: ModelCallOptions = {}): Promise<string> {
    const deadline = createDeadline(this.deps.config.MODEL_TIMEOUT_MS, signal);
    try {
      return await this.model.adapter!.complete({ ...options, messages: prompt, signal: deadline.signal });
    } catch (err) {
      throw await this.#fail(err, deadline);
    } finally {
      deadline.clear();
    }
  }

  /**
   * The model's reply in pieces. Resolves once the upstream accepted the request; a
   * failure before that, or while iterating, refunds and throws an ApiError. A caller
   * that stops iterating early must call `abandon`.
   */
  async stream(prompt: ChatMessage[], signal: AbortSignal, options: ModelCallOptions = {}): Promise<AsyncIterable<string>> {
    const deadline = createDeadline(this.deps.config.MODEL_TIMEOUT_MS, signal);
    let upstream: AsyncIterable<string>;
    try {
      upstream = await this.model.adapter!.stream({ ...options, messages: prompt, signal: deadline.signal });
      deadline.touch();
    } catch (err) {
      deadline.clear();
      throw await this.#fail(err, deadline);
    }
    const fail = (err: unknown) => this.#fail(err, deadline);
    return (async function* () {
      try {
        for await (const delta of upstream) {
          deadline.touch();
          yield delta;
        }
      } catch (err) {
        throw await fail(err);
      } finally {
        deadline.clear();
      }
    })();
  }

  /**
   * Stores the exchange in one batch that also settles its hold: the caller's statements
   * (its messages), the usage record and, with an Idempotency-Key, the reply for replays.
   * If the batch fails, the charge is refunded and the error rethrown.
   */
  async settle(options: { statements?: Statement[]; contextId?: string | null; reply: { status: number; body: unknown } }): Promise<void> {
    if (this.#ended) throw new Error("this exchange has already ended");
    this.#ended = true;
    const { db } = this.deps;
    const hold = settleHoldStatements(db, this.charge);
    const statements: Statement[] = [
      hold.first,
      ...(options.statements ?? []),
      usageEventStatement(db, {
        id: randomId("use"),
        userId: this.charge.userId,
        at: this.charge.at,
        model: this.model.id,
        contextId: options.contextId ?? null,
        credits: this.charge.credits,
      }),
    ];
    if (this.claim) statements.push(finishClaimStatement(db, this.claim, this.deps.now(), options.reply));
    statements.push(hold.last);
    try {
      await db.batch(statements as Batch);
    } catch (err) {
      this.#ended = false;
      await this.abandon("the exchange could not be stored");
      throw err;
    }
  }

  /** Releases the hold (refunds it) and the key, once; for a client that left, or any failure. */
  async abandon(reason: string): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    const { db, log } = this.deps;
    const { userId, day, credits: price } = this.charge;
    const statements: Statement[] = [...releaseHoldStatements(db, this.charge)];
    if (this.claim) statements.push(releaseClaimStatement(db, this.claim));
    try {
      await db.batch(statements as Batch);
      log.info("chat charge refunded", { requestId: this.requestId, userId, day, credits: price, reason });
    } catch (err) {
      log.error("could not refund a chat charge", { requestId: this.requestId, userId, day, credits: price, reason, err });
    }
  }

  /** Refunds, logs the cause with the request id, and returns the error for the client. */
  async #fail(err: unknown, deadline: Deadline): Promise<ApiError> {
    const model = this.model.id;
    const ms = this.deps.config.MODEL_TIMEOUT_MS;
    const limit = ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
    let error: ApiError;
    if (deadline.timedOut) {
      error = new ApiError(504, `model ${model} did not answer within ${limit}; nothing was charged, try again`);
    } else if (deadline.signal.aborted) {
      error = new ApiError(400, "the request was cancelled by the client before the reply was complete; nothing was charged");
    } else if (err instanceof UpstreamError && err.credentialsRejected) {
      error = new ApiError(503, `model ${model} is not reachable: its provider refused this server's credentials; nothing was charged`);
    } else {
      error = new ApiError(502, `model ${model} failed to answer; nothing was charged, try again`);
    }
    const level = error.status === 400 ? "info" : "warn";
    this.deps.log[level]("chat model call failed", { requestId: this.requestId, model, status: error.status, err });
    await this.abandon(`model call failed (${error.status})`);
    return error;
  }
}

// ---------------------------------------------------------------------------------------
// Chat in a context: the route's use of the core. New contexts are created by the batch
// that stores the first exchange, so a failed first message leaves nothing behind.
// ---------------------------------------------------------------------------------------

/** Token estimate used for history trimming: ~3 characters a token plus a per-message overhead. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3) + 4;
}
/** estimateTokens in SQL: integer division rounds down, so +2 makes it the ceiling. */
const tokensOf = (content: unknown) => sql<number>`((length(${content}) + 2) / 3 + 4)`;

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

export type ChatStart =
  | { kind: "replay"; status: number; body: ChatReply }
  | {
      kind: "ready";
      exchange: Exchange;
      contextId: string;
      /** What the model receives: the context's history that fits, then the message. */
      prompt: ChatMessage[];
      /** Stores the exchange (one batch) and returns the reply. */
      finish(response: string): Promise<ChatReply>;
    };

/** What makes two requests with the same Idempotency-Key the same request. */
export function chatFingerprint(input: { message: string; modelId?: string; contextId?: string }): Promise<string> {
  return sha256Hex(JSON.stringify(["POST /chat/send", input.message, input.modelId ?? null, input.contextId ?? null]));
}

/**
 * Opens a chat exchange for a message: checks the context (404 for another user's or an
 * unknown one, without a charge), loads the history that fits the model's window, and
 * debits, all in the one opening batch.
 */
export async function startChat(deps: ChatDeps, input: ChatSendInput): Promise<ChatStart> {
  const { db } = deps;
  const userId = input.principal.userId;
  const contextId = input.contextId ?? randomId("ctx");
  const isNew = input.contextId === undefined;
  // The history budget depends on the model; with the user's default it is read in the
  // same batch, so load for the largest window and trim below.
  const requested = input.modelId === undefined ? undefined : requireModel(deps.models, input.modelId);
  const widest = requested ?? { contextWindow: Math.max(...deps.models.list().map((m) => m.contextWindow)) };

  const extension: OpeningExtension = {};
  const prepared = chatStatements(db);
  if (!isNew) {
    extension.contextId = contextId;
    extension.reads = [
      bound(prepared.contextUpdatedAt, { contextId, userId }),
      bound(prepared.history, { contextId, userId, budget: Math.max(0, historyBudget(widest, input.message)) }),
    ];
    extension.explainRefusal = ([context]) =>
      (context as unknown[]).length === 0 ? new ApiError(404, `context ${contextId} not found`) : undefined;
  }
  const idempotency = input.idempotencyKey
    ? { key: input.idempotencyKey, fingerprint: input.fingerprint ?? (await chatFingerprint(input)) }
    : undefined;

  const opened = await openExchange(deps, { principal: input.principal, modelId: input.modelId, idempotency, requestId: input.requestId, extension });
  if (opened.kind === "replay") return { kind: "replay", status: opened.status, body: opened.body as ChatReply };

  const { exchange } = opened;
  const lastUpdate = isNew ? 0 : ((opened.reads[0] as Array<{ updatedAt: Date }>)[0]?.updatedAt.getTime() ?? 0);
  const loaded = isNew ? [] : (opened.reads[1] as Array<{ role: "user" | "assistant"; content: string; tokens: number }>);
  const prompt: ChatMessage[] = [...fitHistory(loaded, historyBudget(exchange.model, input.message)), { role: "user", content: input.message }];

  return {
    kind: "ready",
    exchange,
    contextId,
    prompt,
    async finish(response) {
      // Messages sort by (createdAt, id): keep each exchange after the context's last one
      // even when clocks (of nodes, or a test's) stand still or disagree.
      const userAt = new Date(Math.max(exchange.at.getTime(), lastUpdate + 1));
      const replyAt = new Date(Math.max(deps.now().getTime(), userAt.getTime() + 1));
      const reply: ChatReply = { response, model: exchange.model.id, contextId, credits: withoutDay(exchange.credits) };
      const statements: Statement[] = [
        isNew
          ? bound(prepared.insertContext, { contextId, userId, name: contextNameFrom(input.message), createdAt: userAt, updatedAt: replyAt })
          : bound(prepared.touchContext, { contextId, userId, updatedAtMs: replyAt.getTime() }),
        bound(prepared.insertExchange, {
          contextId,
          userId,
          userMessageId: randomId("msg"),
          message: input.message,
          userAt,
          replyId: randomId("msg"),
          response,
          model: exchange.model.id,
          replyAt,
        }),
      ];
      try {
        await exchange.settle({ statements, contextId, reply: { status: 200, body: reply } });
      } catch (err) {
        if (!isNew && /FOREIGN KEY/i.test(String((err as Error)?.message ?? err))) {
          throw new ApiError(404, `context ${contextId} was deleted while the model was answering; nothing was charged`);
        }
        throw err;
      }
      return reply;
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
    history: historyStatement(db, userId, contextId, sql.placeholder("budget")).prepare(),
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
 * The newest messages of a context whose estimated tokens fit `budget`, oldest first, with
 * their running total (newest first), so a smaller window can trim further without a read.
 * Only the newest MAX_HISTORY_MESSAGES are read (a walk down the context's index), so a
 * long context costs no more than that.
 */
function historyStatement(db: Db, userId: Placeholder, contextId: Placeholder, budget: Placeholder) {
  const newest = db
    .select({ id: messages.id, role: messages.role, content: messages.content, createdAt: messages.createdAt })
    .from(messages)
    .where(and(eq(messages.contextId, contextId), eq(messages.userId, userId)))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(MAX_HISTORY_MESSAGES)
    .as("newest");
  const ranked = db
    .select({
      id: newest.id,
      role: newest.role,
      content: newest.content,
      createdAt: newest.createdAt,
      tokens: sql<number>`sum(${tokensOf(newest.content)}) over (order by ${newest.createdAt} desc, ${newest.id} desc)`.as("tokens"),
    })
    .from(newest)
    .as("ranked");
  return db
    .select({ role: ranked.role, content: ranked.content, tokens: ranked.tokens })
    .from(ranked)
    .where(lte(ranked.tokens, budget))
    .orderBy(asc(ranked.createdAt), asc(ranked.id));
}

/** Drops the oldest messages whose running total (newest first) exceeds the budget. */
function fitHistory(loaded: Array<{ role: "user" | "assistant"; content: string; tokens: number }>, budget: number): ChatMessage[] {
  return loaded.filter((m) => m.tokens <= budget).map(({ role, content }) => ({ role, content }));
}
