import { and, desc, eq, gte, lt, lte, or, sql } from "drizzle-orm";
import type { Position } from "../../platform/db";
import { bind, perDb, template, type Db, type Step } from "../../platform/db";
import { contexts, creditDays, usageEvents } from "../../../schema/index";
import { utcDay, utcDayBefore } from "./credits";
import { rollupStatements } from "./usage-rollups";

/** Credits used per day, newest first, every day of the range included (0 when unused). */
export async function usageByDay(db: Db, userId: string, now: Date, days: number): Promise<Array<{ day: string; used: number }>> {
  const newest = utcDay(now);
  const oldest = utcDayBefore(now, days - 1);
  const rows = await db
    .select({ day: creditDays.day, used: creditDays.used })
    .from(creditDays)
    .where(and(eq(creditDays.userId, userId), gte(creditDays.day, oldest), lte(creditDays.day, newest)));
  const used = new Map(rows.map((r) => [r.day, r.used]));
  return Array.from({ length: days }, (_, i) => {
    const day = utcDayBefore(now, i);
    return { day, used: used.get(day) ?? 0 };
  });
}

export interface UsageItem {
  at: string;
  model: string;
  contextId: string | null;
  /** The context's name now; null without a context, or when it was deleted. */
  contextName: string | null;
  /** The reply the credits paid for (its branch of the context); null without a context. */
  messageId: string | null;
  credits: number;
}

/** One page of charged messages, newest first. One read. */
export async function listUsageMessages(
  db: Db,
  userId: string,
  page: { limit: number; after?: Position },
): Promise<{ items: UsageItem[]; next: Position | null }> {
  const after = page.after && { at: new Date(page.after.at), id: page.after.id };
  const rows = await db
    .select({
      id: usageEvents.id,
      at: usageEvents.at,
      model: usageEvents.model,
      contextId: usageEvents.contextId,
      contextName: contexts.name,
      messageId: usageEvents.messageId,
      credits: usageEvents.credits,
    })
    .from(usageEvents)
    .leftJoin(contexts, eq(contexts.id, usageEvents.contextId))
    .where(
      and(
        eq(usageEvents.userId, userId),
        eq(usageEvents.kind, "message"),
        eq(usageEvents.outcome, "ok"),
        after ? or(lt(usageEvents.at, after.at), and(eq(usageEvents.at, after.at), lt(usageEvents.id, after.id))) : undefined,
      ),
    )
    .orderBy(desc(usageEvents.at), desc(usageEvents.id))
    .limit(page.limit + 1);
  const more = rows.length > page.limit;
  const pageRows = more ? rows.slice(0, page.limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map((r) => ({ at: r.at.toISOString(), model: r.model, contextId: r.contextId, contextName: r.contextName, messageId: r.messageId, credits: r.credits })),
    next: more && last ? { at: last.at.getTime(), id: last.id } : null,
  };
}

/** One model call's usage: a person's message (charged), or a title (the operator's, 0 credits). */
export interface UsageEvent {
  id: string;
  userId: string;
  at: Date;
  model: string;
  contextId: string | null;
  messageId: string | null;
  credits: number;
  kind: "message" | "title";
  /** The API key that asked, if one did. */
  keyId?: string | null;
  /** From the call to the first piece of a streamed reply. */
  firstTokenMs?: number | null;
  /** `failed`: the model failed or timed out, and nothing was charged. */
  outcome?: "ok" | "failed";
  inputTokens: number;
  outputTokens: number;
  /** The provider gave no counts: the tokens are estimated. */
  tokensEstimated: boolean;
}

/**
 * The usage record of one model call, and what it adds to the usage rollups (the admin's
 * report: usage-rollups.ts), for the batch that stores it at `storedAt`.
 */
export function usageStatements(db: Db, event: UsageEvent, storedAt: Date): Step[] {
  const firstTokenMs = event.firstTokenMs ?? null;
  const outcome = event.outcome ?? "ok";
  return [
    bind(usageEventTemplate(db), { ...event, keyId: event.keyId ?? null, firstTokenMs, outcome, tokensEstimated: event.tokensEstimated ? 1 : 0 }),
    ...rollupStatements(db, { ...event, firstTokenMs, outcome }, storedAt),
  ];
}

// Part of every chat message: built once per handle (see perDb).
const usageEventTemplate = perDb((db) =>
  template(
    db
      .insert(usageEvents)
      .values({
        id: sql.placeholder("id"),
        userId: sql.placeholder("userId"),
        at: sql.placeholder("at"),
        model: sql.placeholder("model"),
        contextId: sql.placeholder("contextId"),
        messageId: sql.placeholder("messageId"),
        credits: sql.placeholder("credits"),
        kind: sql.placeholder("kind"),
        inputTokens: sql.placeholder("inputTokens"),
        outputTokens: sql.placeholder("outputTokens"),
        tokensEstimated: sql.placeholder("tokensEstimated"),
        keyId: sql.placeholder("keyId"),
        firstTokenMs: sql.placeholder("firstTokenMs"),
        outcome: sql.placeholder("outcome"),
      }),
  ),
);
