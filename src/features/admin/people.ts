import { and, desc, eq, gte, lt, or, sql, type SQL } from "drizzle-orm";
import type { Db, Position } from "../../platform/db";
import { methodOf } from "../../platform/auth/sign-in-methods";
import type { SignInMethod } from "../../platform/auth/session-tokens";
import type { Plans } from "../../platform/plans";
import { apiKeys, creditDays, sessions, users } from "../../../schema/index";
import { GRANT_DAY, utcDay, utcDayBefore } from "../account/credits";
import { userNotFound } from "./actions";

// ---------------------------------------------------------------------------------------
// The people of the service as admins see them: one read for a page of accounts, with what
// each used today, its granted balance and its messages in the last 30 days (correlated
// subqueries over indexed rows), and one batch for a person's page.
// ---------------------------------------------------------------------------------------

export interface PersonSummary {
  id: string;
  name: string;
  avatarUrl: string | null;
  signInMethods: SignInMethod[];
  createdAt: string;
  lastSeenAt: string | null;
  status: "active" | "suspended";
  suspendedReason: string | null;
  plan: string;
  creditsUsedToday: number;
  granted: number;
  messages30Days: number;
}

export interface PeopleQuery {
  q?: string;
  status?: "active" | "suspended";
  plan?: string;
  limit: number;
  after?: Position;
}

/** The columns of a person's summary, for `today` and the 30 days up to it. */
function summaryFields(today: string, since: number) {
  return {
    id: users.id,
    name: users.name,
    avatarUrl: users.avatarUrl,
    createdAt: users.createdAt,
    suspendedAt: users.suspendedAt,
    suspendedReason: users.suspendedReason,
    planId: users.planId,
    issuers: sql<string>`(select json_group_array(distinct i.issuer) from identities i where i.user_id = users.id)`,
    ownIssuer: users.issuer,
    lastSeenAt: sql<number | null>`max(
      coalesce((select max(s.last_used_at) from sessions s where s.user_id = users.id), 0),
      coalesce((select max(k.last_used_at) from api_keys k where k.user_id = users.id), 0),
      coalesce((select max(u.at) from usage_events u where u.user_id = users.id), 0))`,
    usedToday: sql<number>`coalesce((select d.used from credit_days d where d.user_id = users.id and d.day = ${today}), 0)`,
    granted: sql<number>`${users.grantedCredits} - coalesce((select d.used from credit_days d where d.user_id = users.id and d.day = ${GRANT_DAY}), 0)`,
    messages30Days: sql<number>`(select count(*) from usage_events u where u.user_id = users.id and u.kind = 'message' and u.outcome = 'ok' and u.at >= ${since})`,
  };
}

type SummaryRow = { [K in keyof ReturnType<typeof summaryFields>]: unknown };

function toSummary(row: SummaryRow, plans: Plans): PersonSummary {
  const issuers = new Set<string>([...(JSON.parse(String(row.issuers ?? "[]")) as string[]), String(row.ownIssuer)]);
  const seen = Number(row.lastSeenAt ?? 0);
  return {
    id: String(row.id),
    name: String(row.name),
    avatarUrl: (row.avatarUrl as string | null) ?? null,
    signInMethods: [...new Set([...issuers].map(methodOf))],
    createdAt: (row.createdAt as Date).toISOString(),
    lastSeenAt: seen > 0 ? new Date(seen).toISOString() : null,
    status: row.suspendedAt ? "suspended" : "active",
    suspendedReason: (row.suspendedReason as string | null) ?? null,
    plan: plans.of(row.planId as string | null).id,
    creditsUsedToday: Number(row.usedToday),
    granted: Math.max(0, Number(row.granted)),
    messages30Days: Number(row.messages30Days),
  };
}

/** The condition `q` makes: a name or e-mail that contains it, an id, or a wallet address (any case). */
function matching(q: string): SQL {
  const like = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const lower = q.toLowerCase();
  return or(
    eq(users.id, q),
    sql`lower(${users.name}) like ${like} escape '\\'`,
    sql`lower(${users.email}) like ${like} escape '\\'`,
    sql`lower(${users.wallet}) = ${lower}`,
    sql`exists (select 1 from identities i where i.user_id = users.id and (lower(i.subject) = ${lower} or lower(i.label) like ${like} escape '\\'))`,
  )!;
}

/** The condition a plan filter makes: the accounts on it (the default plan's include those on none or an unknown one). */
function onPlan(plan: string, plans: Plans): SQL {
  if (plan !== plans.defaultPlan.id) return eq(users.planId, plan);
  const others = plans.list.filter((p) => !p.default).map((p) => p.id);
  return sql`(${users.planId} is null or ${users.planId} not in (${others.length > 0 ? sql.join(others.map((id) => sql`${id}`), sql`, `) : sql`''`}))`;
}

/** A page of accounts, newest first. One read. */
export async function listPeople(db: Db, plans: Plans, query: PeopleQuery, now: Date): Promise<{ items: PersonSummary[]; next: Position | null }> {
  const after = query.after;
  const rows = await db
    .select(summaryFields(utcDay(now), now.getTime() - 30 * 86_400_000))
    .from(users)
    .where(
      and(
        query.q ? matching(query.q) : undefined,
        query.status === undefined ? undefined : query.status === "suspended" ? sql`${users.suspendedAt} is not null` : sql`${users.suspendedAt} is null`,
        query.plan === undefined ? undefined : onPlan(query.plan, plans),
        after ? or(lt(users.createdAt, new Date(after.at)), and(eq(users.createdAt, new Date(after.at)), lt(users.id, after.id))) : undefined,
      ),
    )
    .orderBy(desc(users.createdAt), desc(users.id))
    .limit(query.limit + 1);
  const more = rows.length > query.limit;
  const shown = more ? rows.slice(0, query.limit) : rows;
  const last = shown.at(-1);
  return { items: shown.map((r) => toSummary(r, plans)), next: more && last ? { at: last.createdAt.getTime(), id: last.id } : null };
}

export interface PersonDetail extends PersonSummary {
  sessions: Array<{ id: string; method: SignInMethod; device: string; createdAt: string; lastUsedAt: string }>;
  apiKeys: Array<{ id: string; name: string; prefix: string; createdAt: string; lastUsedAt: string | null; dailyCreditLimit: number | null; expiresAt: string | null; models: string[] | null }>;
  creditsPerDay: Array<{ day: string; used: number }>;
}

/** A person's page: the summary, live sessions, API keys and credits per day for 30 days. One batch. */
export async function getPerson(db: Db, plans: Plans, userId: string, now: Date): Promise<PersonDetail> {
  const oldest = utcDayBefore(now, 29);
  const [[row], sessionRows, keyRows, dayRows] = await db.batch([
    db.select(summaryFields(utcDay(now), now.getTime() - 30 * 86_400_000)).from(users).where(eq(users.id, userId)).limit(1),
    db.select().from(sessions).where(eq(sessions.userId, userId)).orderBy(desc(sessions.lastUsedAt)),
    db.select().from(apiKeys).where(eq(apiKeys.userId, userId)).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)),
    db
      .select({ day: creditDays.day, used: creditDays.used })
      .from(creditDays)
      .where(and(eq(creditDays.userId, userId), gte(creditDays.day, oldest), lt(creditDays.day, GRANT_DAY))),
  ]);
  if (!row) throw userNotFound(userId);
  const used = new Map(dayRows.map((d) => [d.day, d.used]));
  return {
    ...toSummary(row, plans),
    sessions: sessionRows.map((s) => ({ id: s.id, method: s.method, device: s.device, createdAt: s.createdAt.toISOString(), lastUsedAt: s.lastUsedAt.toISOString() })),
    apiKeys: keyRows.map((k) => ({
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      createdAt: k.createdAt.toISOString(),
      lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
      dailyCreditLimit: k.dailyCreditLimit,
      expiresAt: k.expiresAt?.toISOString() ?? null,
      models: k.models,
    })),
    creditsPerDay: Array.from({ length: 30 }, (_, i) => {
      const day = utcDayBefore(now, i);
      return { day, used: used.get(day) ?? 0 };
    }),
  };
}
