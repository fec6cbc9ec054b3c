import { z } from "zod";

// ---------------------------------------------------------------------------------------
// PLANS: what each account may use, as JSON (or PLANS_FILE on Node), parsed once at start; a
// bad entry stops the start naming the entry and the field, as MODELS does. One plan is the
// default: the plan of every account no admin or invite has put on another. Unset, the one
// built-in plan is today's: DAILY_CREDITS a day, every model.
// ---------------------------------------------------------------------------------------

export interface Plan {
  id: string;
  name: string;
  dailyCredits: number;
  /** The model ids it includes, or every model. */
  models: string[] | "*";
  /** Model calls (messages, regenerations, edits, /v1 completions) an account may ask for a minute, counted in the database (src/features/chat/plan-rate.ts); null: no limit of its own (RATE_LIMIT_PER_MINUTE still counts every request). */
  requestsPerMinute: number | null;
  /** API keys an account may hold; null: the service's limit (25). */
  maxApiKeys: number | null;
  default: boolean;
}

export interface Plans {
  list: Plan[];
  defaultPlan: Plan;
  /** The plan of this id; an unknown or null id is the default plan. */
  of(id: string | null | undefined): Plan;
  /** Whether the plan `id` names exists. */
  has(id: string): boolean;
}

const PLAN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$/;
const FIELDS = "id, name, dailyCredits, models, requestsPerMinute, maxApiKeys, default";

const PlanSchema = z.strictObject(
  {
    id: z.string({ error: "must be a string" }).regex(PLAN_ID, "must be 1..50 letters, digits and . _ -, starting with a letter or digit"),
    name: z.string({ error: "must be a string" }).min(1, "must not be empty").max(100, "must be at most 100 characters"),
    dailyCredits: z.number({ error: "must be a number" }).int("must be a whole number").min(0, "must be 0 or more").max(100_000_000, "must be at most 100000000"),
    models: z.union([z.literal("*"), z.array(z.string().min(1).max(100), { error: 'must be a list of model ids or "*"' }).max(1000)], {
      error: 'must be a list of model ids or "*" (every model)',
    }),
    requestsPerMinute: z.number({ error: "must be a number" }).int("must be a whole number").min(1, "must be 1 or more").max(1_000_000).optional(),
    maxApiKeys: z.number({ error: "must be a number" }).int("must be a whole number").min(0, "must be 0 or more").max(1000).optional(),
    default: z.boolean({ error: "must be true or false" }).optional(),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown field; the fields are ${FIELDS}` : "must be an object") },
);

export class PlansError extends Error {
  override name = "PlansError";
}

/** The built-in plan: today's allowance, every model. */
export function builtInPlans(dailyCredits: number): Plans {
  return plansOf([{ id: "default", name: "Default", dailyCredits, models: "*", requestsPerMinute: null, maxApiKeys: null, default: true }]);
}

/**
 * Parses PLANS (`source` names where the text came from); `modelIds` are the catalog's, which
 * a plan's models must be among (unless the catalog discovers models at providers). Throws a
 * PlansError listing every problem as `PLANS[1] (team).dailyCredits: …`.
 */
export function parsePlans(text: string, source: string, modelIds: ReadonlySet<string> | undefined): Plans {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new PlansError(`${source} is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!Array.isArray(raw) || raw.length === 0) throw new PlansError(`${source} must be a JSON array of plans, e.g. [{"id":"free","name":"Free","dailyCredits":500,"models":"*","default":true}]`);
  const problems: string[] = [];
  const plans: Plan[] = [];
  raw.forEach((item, i) => {
    const id = (item as { id?: unknown })?.id;
    const label = `${source}[${i}]${typeof id === "string" && id.length <= 50 ? ` (${id})` : ""}`;
    const parsed = PlanSchema.safeParse(item);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push(`${label}${issue.path.length > 0 ? `.${issue.path.join(".")}` : ""}: ${issue.message}`);
      return;
    }
    const p = parsed.data;
    if (plans.some((q) => q.id === p.id)) problems.push(`${label}.id: another plan has this id`);
    const unknown = p.models === "*" || !modelIds ? [] : p.models.filter((m) => !modelIds.has(m));
    if (unknown.length > 0) problems.push(`${label}.models: no model '${unknown[0]}' in the catalog`);
    plans.push({ ...p, requestsPerMinute: p.requestsPerMinute ?? null, maxApiKeys: p.maxApiKeys ?? null, default: p.default === true });
  });
  const defaults = plans.filter((p) => p.default).length;
  if (problems.length === 0 && defaults !== 1) problems.push(`${source}: exactly one plan must have "default": true (${defaults} have)`);
  if (problems.length > 0) throw new PlansError(problems.join("; "));
  return plansOf(plans);
}

function plansOf(list: Plan[]): Plans {
  const byId = new Map(list.map((p) => [p.id, p]));
  const defaultPlan = list.find((p) => p.default)!;
  return {
    list,
    defaultPlan,
    of: (id) => (id ? (byId.get(id) ?? defaultPlan) : defaultPlan),
    has: (id) => byId.has(id),
  };
}

/** Whether the plan includes the model. */
export function planIncludes(plan: Plan, modelId: string): boolean {
  return plan.models === "*" || plan.models.includes(modelId);
}
