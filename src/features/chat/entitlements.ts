import { sql, type SQL } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { suspendedMessage } from "../../platform/auth/suspended-accounts";
import { DomainError } from "../../platform/errors";
import { planIncludes, type Plan, type Plans } from "../../platform/plans";

// ---------------------------------------------------------------------------------------
// What an account may spend, as SQL for the opening batch's debit (opening.ts), and why a
// debit that charged nothing was refused. All of it is read in the same statement that
// debits, so it costs no round trip: the plan (its daily credits, models and model calls a
// minute: plan-rate.ts), the granted balance, a suspension, and an API key's own limits (its
// models, its credits a day, counted from its stored exchanges and its holds in flight).
// ---------------------------------------------------------------------------------------

/** The plans as one JSON placeholder value: `{ id: { daily, models, rpm } }`, built once per Plans. */
const plansJson = new WeakMap<Plans, string>();
export function plansValue(plans: Plans): string {
  let value = plansJson.get(plans);
  if (value === undefined) {
    value = JSON.stringify(Object.fromEntries(plans.list.map((p) => [p.id, { daily: p.dailyCredits, models: p.models, rpm: p.requestsPerMinute }])));
    plansJson.set(plans, value);
  }
  return value;
}

/** `from users u join <the caller's plan> pl where u is the caller`: the account's plan as `pl.value`. */
export function callerPlan(): SQL {
  const plans = sql.placeholder("plans");
  return sql`from users u join json_each(${plans}) pl
    on pl.key = coalesce((select p2.key from json_each(${plans}) p2 where p2.key = u.plan_id), ${sql.placeholder("defaultPlan")})
    where u.id = ${sql.placeholder("userId")}`;
}

/**
 * The caller's plan where the caller is not suspended and the plan includes the model: what
 * both allowances select from. `modelId` is the model asked for (an SQL expression: the
 * default model is known only in SQL).
 */
function entitled(modelId: SQL): SQL {
  return sql`${callerPlan()} and u.suspended_at is null
      and (json_extract(pl.value, '$.models') = '*' or exists (select 1 from json_each(pl.value, '$.models') m where m.value = ${modelId}))`;
}

/** The day's allowance of the caller's plan; NULL (so no debit) when suspended or the plan excludes the model. */
export function dayAllowance(modelId: SQL): SQL {
  return sql`(select json_extract(pl.value, '$.daily') ${entitled(modelId)})`;
}

/** The credits ever granted to the caller (the grant's "day" counts up to it); NULL on the same terms. */
export function grantAllowance(modelId: SQL): SQL {
  return sql`(select u.granted_credits ${entitled(modelId)})`;
}

/**
 * An API key's own limits, as guards of the debit (`charge.price` is the price it charges):
 * the models it may call, and its credits a UTC day: those its stored exchanges were charged
 * today and those its exchanges in flight hold. Batches run one at a time on the database,
 * so concurrent requests with one key cannot pass its limit together.
 */
export function keyGuards(modelId: SQL): SQL[] {
  const keyId = sql.placeholder("keyId");
  const limit = sql.placeholder("keyLimit");
  const models = sql.placeholder("keyModels");
  return [
    sql`(${models} is null or exists (select 1 from json_each(${models}) k where k.value = ${modelId}))`,
    sql`(${limit} is null or ${keyCreditsUsed(keyId)} + charge.price <= ${limit})`,
  ];
}

/** What the key spent today and holds now, in SQL. */
export function keyCreditsUsed(keyId: SQL | ReturnType<typeof sql.placeholder>): SQL {
  return sql`((select coalesce(sum(e.credits), 0) from usage_events e where e.key_id = ${keyId} and e.at >= ${sql.placeholder("dayStart")})
    + (select coalesce(sum(h.credits), 0) from credit_holds h where h.key_id = ${keyId}))`;
}

/** The values of the placeholders above, for the caller and the day starting at `dayStart`. */
export function entitlementValues(plans: Plans, principal: Principal, dayStart: number) {
  const limits = principal.via === "api-key" ? principal.limits : undefined;
  return {
    plans: plansValue(plans),
    defaultPlan: plans.defaultPlan.id,
    dayStart,
    keyId: principal.via === "api-key" ? principal.keyId : null,
    keyLimit: limits?.dailyCreditLimit ?? null,
    keyModels: limits?.models ? JSON.stringify(limits.models) : null,
  };
}

/** Whether the caller comes with an API key its owner limited (the debit then carries keyGuards). */
export function hasKeyLimits(principal: Principal): boolean {
  return principal.via === "api-key" && !!principal.limits && (principal.limits.dailyCreditLimit !== null || principal.limits.models !== null);
}

/** What the opening read of the account says of what it may spend. */
export interface Entitlement {
  suspended: string | null | undefined;
  plan: Plan;
  /** Granted credits left. */
  granted: number;
  /** What the caller's API key spent today and holds, if it is limited. */
  keyUsed: number;
  /** The account's model calls this minute, this one included, where its plan limits them (plan-rate.ts). */
  callsThisMinute: number;
}

/**
 * Why the debit of `price` for `modelId` was refused, where it is the account's plan, its
 * suspension or its key (a 403, or the key's 402); undefined: it is the credits.
 */
export function entitlementRefusal(principal: Principal, e: Entitlement, modelId: string, price: number, waitSeconds: number): DomainError | undefined {
  if (e.suspended !== undefined) return new DomainError("account_suspended", suspendedMessage(e.suspended));
  const limits = principal.via === "api-key" ? principal.limits : undefined;
  if (limits?.models && !limits.models.includes(modelId)) {
    return new DomainError("model_not_allowed_for_key", `this API key may call only ${limits.models.join(", ")}, not ${modelId}; use another key or ask for one of those`, { field: "model" });
  }
  if (!planIncludes(e.plan, modelId)) {
    const models = e.plan.models === "*" ? "every model" : e.plan.models.join(", ");
    return new DomainError("model_not_in_plan", `your plan (${e.plan.name}) does not include model ${modelId}; it includes ${models}`, { field: "model" });
  }
  if (limits?.dailyCreditLimit != null && e.keyUsed + price > limits.dailyCreditLimit) {
    return new DomainError(
      "api_key_credit_limit",
      `this API key has spent ${e.keyUsed} of its ${limits.dailyCreditLimit} credits for today; it gets them back at 00:00 UTC, and the account's other keys and sessions still work`,
      { retryAfterSeconds: waitSeconds },
    );
  }
  return undefined;
}
