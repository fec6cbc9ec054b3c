import { and, eq, sql, type Placeholder, type SQL } from "drizzle-orm";
import QuickLRU from "quick-lru";
import type { Principal } from "../../platform/auth/principal";
import { ensureUserStep } from "../../platform/auth/users";
import { timeOrderedId } from "../../platform/encoding";
import { Batch, bind, type Db, firstRow, perDb, selectTemplate, step, template, type Results } from "../../platform/db";
import type { DomainError } from "../../platform/errors";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { creditDays, users } from "../../../schema/index";
import { creditsFor, debitStatement, describeWait, GRANT_DAY, secondsUntil, utcDay } from "../account/credits";
import { dayAllowance, entitlementRefusal, entitlementValues, grantAllowance, hasKeyLimits, keyCreditsUsed, keyGuards, type Entitlement } from "./entitlements";
import { CreditsUsedUp, IdempotencyKeyInUse, IdempotencyKeyReused, ModelUnavailable, PriceOverAllowance } from "./errors";
import type { ChatDeps, Exchange } from "./exchange";
import { HOLD_MARGIN_MS, holdStatement, releaseStaleStatements, renewalInterval, staleBefore } from "./holds";
import { callsThisMinute, countCallStatements, minuteOf, planRateRefusal, plansLimitCalls, withinPlanRate } from "./plan-rate";
import { claimHeldGuard, claimState, claimStatement, newClaim, readClaimStep, releaseClaimStatement, type IdempotencyClaim } from "./idempotency";
import { answerChain, defaultModelFor, holdPrice, requireModel, unavailable } from "./model-chain";

// ---------------------------------------------------------------------------------------
// Opening an exchange: one batch that creates the user on first sight, releases the
// user's abandoned holds, claims the Idempotency-Key, debits the price and holds it, and
// runs beside what the caller reads (a context's branch), which it hands in already added.
// ---------------------------------------------------------------------------------------

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

/** The id of the user's default model in SQL, as defaultModelPrice picks it (for the plan's and a key's models). */
function defaultModelId(): SQL {
  return sql`(select case when p.key is null then ${sql.placeholder("fallbackModel")} else p.key end from users u left join json_each(${sql.placeholder(
    "prices",
  )}) p on p.key = json_extract(u.preferences, '$.defaultModel') where u.id = ${sql.placeholder("userId")})`;
}

function defaultPriceValues(models: ModelRegistry): Record<string, unknown> {
  const list = models.list();
  let values = defaultPrices.get(list);
  if (!values) {
    const price = (m: RegisteredModel) => (m.available ? holdPrice(answerChain(models, m)) : null);
    const fallback = models.defaultModel()!;
    values = { fallbackPrice: price(fallback), fallbackModel: fallback.id, prices: JSON.stringify(Object.fromEntries(list.map((m) => [m.id, price(m)]))) };
    defaultPrices.set(list, values);
  }
  return values;
}

// The same for every message until the registry rebuilds its list (a new array, as it does
// when a provider's list of models changes): worked out once per list.
const defaultPrices = new WeakMap<readonly RegisteredModel[], Record<string, unknown>>();

/** Which guards a debit carries, besides its price: each shape is one template. */
interface DebitShape {
  defaultModel: boolean;
  claim: boolean;
  context: boolean;
  message: boolean;
  /** An API key with limits of its own: keyGuards. */
  key: boolean;
  /** A plan limits model calls a minute: withinPlanRate. */
  rate: boolean;
}

const accountFields = {
  used: creditDays.used,
  defaultModel: sql<string | null>`json_extract(${users.preferences}, '$.defaultModel')`,
  planId: users.planId,
  suspendedAt: users.suspendedAt,
  suspendedReason: users.suspendedReason,
  granted: sql<number>`${users.grantedCredits} - coalesce((select g.used from credit_days g where g.user_id = users.id and g.day = ${GRANT_DAY}), 0)`,
  // Summed only for a key with a daily limit, the one case a refusal names it: a sum over
  // the key's events of the day would otherwise grow with every message the key sends.
  keyUsed: sql<number>`case when ${sql.placeholder("keyLimit")} is null then 0 else ${keyCreditsUsed(sql.placeholder("keyId"))} end`,
  calls: callsThisMinute(),
};

/**
 * One shape of the debit: its guards, the charge on the day's allowance and on granted
 * credits, and the hold that records each (see openingStatements).
 */
function prepareDebit(db: Db, shape: DebitShape) {
  const userId = sql.placeholder("userId");
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
  const modelId = shape.defaultModel ? defaultModelId() : sql`${sql.placeholder("modelId")}`;
  if (shape.key) guards.push(...keyGuards(modelId));
  if (shape.rate) guards.push(withinPlanRate());
  const day = sql.placeholder("day");
  const grantDay = sql.placeholder("grantDay");
  const hold = (on: Placeholder) =>
    template(
      holdStatement(db, {
        id: sql.placeholder("holdId"),
        userId,
        day: on,
        price,
        createdAtMs: sql.placeholder("createdAtMs"),
        claimKey: sql.placeholder("holdClaimKey"),
        keyId: sql.placeholder("keyId"),
      }),
    );
  // The granted credits pay only where the day's allowance did not: no hold yet. Checked
  // first: most messages are paid by the day's allowance, and this one index seek then spares
  // the grant's allowance and guards.
  const unpaid = sql`not exists (select 1 from credit_holds where id = ${sql.placeholder("holdId")})`;
  return {
    debit: selectTemplate({ used: creditDays.used }, debitStatement(db, { userId, day, price, allowance: dayAllowance(modelId), guards })),
    // Right after the debit: the hold exists exactly when the debit charged.
    hold: hold(day),
    grantDebit: selectTemplate({ used: creditDays.used }, debitStatement(db, { userId, day: grantDay, price, allowance: grantAllowance(modelId), guards, first: unpaid })),
    grantHold: hold(grantDay),
  };
}

/**
 * The opening batch's statements, built once per handle (see perDb). The debit has a few
 * shapes: an explicit price or the default model's, with or without each guard; each is
 * built on first use.
 */
const openingStatements = perDb((db) => {
  const userId = sql.placeholder("userId");
  const debits = new Map<string, ReturnType<typeof prepareDebit>>();
  const stale = releaseStaleStatements(db, { userId, before: sql.placeholder("staleBefore") });
  return {
    /** The debit and its hold. `defaultModel`: the price is the user's default model's. */
    debit(shape: DebitShape) {
      const key = `${shape.defaultModel}/${shape.claim}/${shape.context}/${shape.message}/${shape.key}/${shape.rate}`;
      let debit = debits.get(key);
      if (!debit) debits.set(key, (debit = prepareDebit(db, shape)));
      return debit;
    },
    /** The user's abandoned holds, released before the claim and the debit. */
    releaseStale: [...stale.first, stale.remove].map((statement) => template(statement)),
    /** This model call counted in the account's minute, where a plan limits them (plan-rate.ts). */
    countCall: countCallStatements(db).map((statement) => template(statement)),
    /** The day's total (to explain a refusal) and the user's default model, in one read. */
    account: selectTemplate(
      accountFields,
      db
        .select(accountFields)
        .from(users)
        .leftJoin(creditDays, and(eq(creditDays.userId, users.id), eq(creditDays.day, sql.placeholder("day"))))
        .where(eq(users.id, userId)),
    ),
  };
});

export interface OpenExchangeInput {
  principal: Principal;
  /** The requested model; undefined: the user's default model, else svc-70b. */
  modelId?: string;
  /** An Idempotency-Key and a fingerprint of what the request asks for. */
  idempotency?: { key: string; fingerprint: string };
  requestId: string;
  /**
   * What the debit also requires: a context of the caller, and a reply in it (the one a
   * message follows, or, with `answersQuestion`, the one regenerated, which must answer a
   * user message). When one is missing the debit charges nothing.
   */
  requires?: { contextId: string; message?: { id: string; answersQuestion: boolean } };
  /** The caller's reads (a context's branch), already added: the opening statements join this batch. */
  batch?: Batch;
  /** What the request asks of a fallback (the OpenAI surface: tools, images); default: any. */
  suits?: (model: RegisteredModel) => boolean;
}

export type Opened =
  | { kind: "replay"; status: number; body: unknown }
  /** Charged: the exchange to run, and the batch's results (the caller's reads among them). */
  | { kind: "charged"; exchange: Exchange; results: Results }
  /**
   * Not charged, and the key given back. `error` says why as far as the opening knows: a
   * `quota` error may also mean that what `requires` names is missing, which the caller's
   * reads can tell.
   */
  | { kind: "refused"; error: DomainError; results: Results };

/**
 * Opens an exchange in one batch: creates the user on first sight, releases the user's
 * abandoned holds, claims the idempotency key, debits the model's price and holds it,
 * beside the caller's reads. Throws IdempotencyKeyInUse (same key still running) and
 * IdempotencyKeyReused (same key, other request); a refused debit is `refused`.
 */
export async function openExchange(deps: ChatDeps, input: OpenExchangeInput): Promise<Opened> {
  const { db, models, config } = deps;
  const userId = input.principal.userId;
  const at = deps.now();
  const explicit = input.modelId === undefined ? undefined : requireModel(models, input.modelId);
  if (!explicit && !models.defaultModel()) {
    throw new ModelUnavailable("no model is configured on this server yet: the operator must set MODELS or a provider's variables (docs/chat.md); nothing was charged");
  }
  const holdId = timeOrderedId("hold");
  const claim = input.idempotency && newClaim(userId, input.idempotency.key, input.idempotency.fingerprint, holdId);
  const batch = input.batch ?? new Batch();
  const slots = addOpeningSteps(deps, batch, { ...input, at, holdId, claim, explicit });
  const results = await batch.run(db);

  if (claim) {
    const state = claimState(results(slots.claim!), claim);
    if (state.kind === "replay") return state;
    if (state.kind === "in-progress") throw new IdempotencyKeyInUse();
    if (state.kind === "mismatch") throw new IdempotencyKeyReused();
  }
  const account = results(slots.account);
  const model = explicit ?? defaultModelFor(models, account?.defaultModel);
  const chain = model.available ? answerChain(models, model, input.suits) : [model];
  const plan = config.plans.of(account?.planId);
  const day = utcDay(at);
  const keyId = input.principal.via === "api-key" ? input.principal.keyId : null;
  const charged = { holdId, userId, at, credits: holdPrice(chain), keyId };
  const used = results(slots.debited);
  if (used !== undefined) {
    const charge = { ...charged, day, used, allowance: plan.dailyCredits };
    return { kind: "charged", exchange: { chain, charge, claim, requestId: input.requestId, ended: false }, results };
  }
  const grantUsed = results(slots.grantDebited);
  if (grantUsed !== undefined) {
    // Paid from the granted credits: the hold is the grant's; the reply shows the day as it stands.
    const shown = { day, used: account?.used ?? 0, allowance: plan.dailyCredits };
    const charge = { ...charged, day: GRANT_DAY, used: grantUsed, allowance: grantUsed + (account?.granted ?? 0), shown };
    return { kind: "charged", exchange: { chain, charge, claim, requestId: input.requestId, ended: false }, results };
  }
  // Refused: give the key back, then say why.
  if (claim) await releaseClaimStatement(db, claim);
  const entitlement: Entitlement = { suspended: account?.suspended, plan, granted: account?.granted ?? 0, keyUsed: account?.keyUsed ?? 0, callsThisMinute: account?.calls ?? 0 };
  return { kind: "refused", error: refusal(input.principal, model, chain, account?.used ?? 0, day, entitlement, at), results };
}

/**
 * When this process last looked for each user's abandoned holds (ms). Six statements that
 * nearly always find nothing were about 7% of the database thread's work for a message
 * (replayed: 120 to 185 µs of 2,100 to 2,300); a busy person's messages now look once every
 * renewal interval (MODEL_TIMEOUT_MS / 3), so a hold left by a process that died is
 * released that much later at most, past the model timeout that makes it stale. Forgetting
 * (a restart, an entry dropped) only makes the next message look again: releasing is
 * always right, and only ever gives back.
 */
const staleReleases = perDb(() => new QuickLRU<string, number>({ maxSize: 10_000 }));

function staleReleaseDue(deps: ChatDeps, userId: string, at: Date): boolean {
  const released = staleReleases(deps.db);
  const last = released.get(userId);
  // A clock that went back (another node's, a test's) looks again.
  if (last !== undefined && at.getTime() >= last && at.getTime() - last < renewalInterval(deps.config)) return false;
  released.set(userId, at.getTime());
  return true;
}

/** The opening's statements, added to the batch in the order they must run; the slots of what is read back. */
function addOpeningSteps(
  deps: ChatDeps,
  batch: Batch,
  input: OpenExchangeInput & { at: Date; holdId: string; claim: IdempotencyClaim | undefined; explicit: RegisteredModel | undefined },
) {
  const { db, models, config } = deps;
  const { at, claim, explicit, requires } = input;
  const userId = input.principal.userId;
  const day = utcDay(at);
  const prepared = openingStatements(db);
  const user = ensureUserStep(db, input.principal, at);
  if (user) batch.add(user);
  // The holds of this user's exchanges that died are released first, so that their
  // credits and their Idempotency-Keys are free for this one.
  if (staleReleaseDue(deps, userId, at)) {
    const stale = { userId, staleBefore: staleBefore(config, at).getTime() };
    for (const release of prepared.releaseStale) batch.add(bind(release, stale));
  }
  if (claim) batch.add(step(claimStatement(db, claim, at, config.MODEL_TIMEOUT_MS + HOLD_MARGIN_MS)));
  const message = requires?.message;
  const rate = plansLimitCalls(config.plans);
  const shape = prepared.debit({ defaultModel: !explicit, claim: !!claim, context: requires !== undefined, message: !!message, key: hasKeyLimits(input.principal), rate });
  const values = {
    userId,
    day,
    minute: minuteOf(at),
    grantDay: GRANT_DAY,
    holdId: input.holdId,
    ...entitlementValues(config.plans, input.principal, Date.parse(`${day}T00:00:00.000Z`)),
    ...(explicit ? { price: holdPrice(answerChain(models, explicit, input.suits)), modelId: explicit.id } : defaultPriceValues(models)),
    ...(claim && { claimKey: claim.key, claimMarker: claim.marker }),
    ...(requires && { contextId: requires.contextId }),
    ...(message && { messageId: message.id, answersQuestion: message.answersQuestion ? 1 : 0 }),
  };
  if (rate) for (const count of prepared.countCall) batch.add(bind(count, values));
  // The day's total once charged, or nothing when the debit was refused.
  const holdValues = { ...values, createdAtMs: at.getTime(), holdClaimKey: claim ? claim.key : null };
  const debited = batch.add(bind(shape.debit, values, firstRow((row) => row.used as number)));
  batch.add(bind(shape.hold, holdValues));
  // Where the day's allowance did not cover it, the granted credits, the same way.
  const grantDebited = batch.add(bind(shape.grantDebit, values, firstRow((row) => row.used as number)));
  batch.add(bind(shape.grantHold, holdValues));
  const account = batch.add(bind(prepared.account, { userId, day, keyId: values.keyId, keyLimit: values.keyLimit, dayStart: values.dayStart, minute: values.minute }, firstRow(accountOf)));
  const claimRead = claim && batch.add(readClaimStep(db, claim));
  return { debited, grantDebited, account, claim: claimRead };
}

/** The account as the opening reads it, to explain a refusal and show the day's credits. */
function accountOf(row: Record<keyof typeof accountFields, unknown>) {
  return {
    used: row.used as number | null,
    defaultModel: (row.defaultModel as string | null) ?? undefined,
    planId: row.planId as string | null,
    suspended: row.suspendedAt === null ? undefined : ((row.suspendedReason as string | null) ?? null),
    granted: Math.max(0, Number(row.granted ?? 0)),
    keyUsed: Number(row.keyUsed ?? 0),
    calls: Number(row.calls ?? 0),
  };
}

/** Why the debit charged nothing, most specific reason first. */
function refusal(principal: Principal, model: RegisteredModel, chain: RegisteredModel[], used: number, day: string, e: Entitlement, at: Date): DomainError {
  if (!model.available) return unavailable(model);
  const allowance = e.plan.dailyCredits;
  const credits = creditsFor(day, used, allowance);
  const held = holdPrice(chain);
  const wait = secondsUntil(credits.resetAt, at);
  const refused = entitlementRefusal(principal, e, model.id, held, wait) ?? planRateRefusal(e.plan, e.callsThisMinute, at);
  if (refused) return refused;
  if (allowance > 0 && held > allowance && held > e.granted) return new PriceOverAllowance(model.id, held, allowance);
  const costs = held > model.credits ? `${model.credits} credits (${held} are held in case a fallback answers)` : `${model.credits} credits`;
  const left = credits.remaining === 0 ? `all ${allowance} of today's credits are used` : `model ${model.id} costs ${costs} and ${credits.remaining} remain today`;
  const grant = e.granted === 0 ? "no granted credits are left" : `the ${e.granted} granted credits left do not cover it`;
  return new CreditsUsedUp(`insufficient credits: ${left} and ${grant}; the day's credits return at 00:00 UTC (${credits.resetAt}, in ${describeWait(wait)})`, credits, wait);
}
