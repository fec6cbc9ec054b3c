import { sql } from "drizzle-orm";
import type { Db } from "../db";
import { users } from "../../../schema/index";

export interface Suspension {
  reason: string | null;
}

/** The refusal's words, the same for a token, an API key and a sign-in. */
export function suspendedMessage(reason: string | null | undefined): string {
  return `this account is suspended by the service's operator${reason ? ` (${reason.slice(0, 200)})` : ""}: ask them to lift it`;
}

/**
 * The suspended accounts, whose tokens are refused (403 account_suspended). A session's or an
 * identity provider's token needs no read to verify, so every process keeps a copy of the
 * suspended ids (`users.suspended_at`, a partial index holding only them): read whole at the
 * first bearer request and again when older than `maxAgeMs`, before answering; what this
 * process suspends or lifts applies here at once. Node (one process over its file): read
 * once. A Workers isolate: within `maxAgeMs` of a suspension elsewhere (30 s, less than an
 * access token's lifetime). API keys are checked by the read that finds the key.
 */
export class SuspendedAccounts {
  private ids = new Map<string, string | null>();
  private loaded = false;
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** Changes this process made, which a read that began before them must not undo. */
  private readonly recent = new Map<string, { reason: string | null | undefined; at: number }>();

  constructor(private readonly maxAgeMs: number) {}

  /**
   * Whether the account is suspended, as its suspension (with the admin's reason, or null) or
   * undefined: from the copy, or once it is read again (a promise).
   */
  suspension(db: Db, userId: string, now: Date): Suspension | undefined | Promise<Suspension | undefined> {
    if (!this.loaded || now.getTime() - this.loadedAt > this.maxAgeMs) return this.load(db, now).then(() => this.holds(userId));
    return this.holds(userId);
  }

  /** Reads the suspended ids (one query over the partial index). */
  load(db: Db, now: Date): Promise<void> {
    this.loading ??= (async () => {
      const startedAt = Date.now();
      try {
        // A literal condition, as the partial index says it, so that SQLite uses it.
        const rows = await db.select({ id: users.id, reason: users.suspendedReason }).from(users).where(sql`suspended_at is not null`);
        this.ids = new Map(rows.map((r) => [r.id, r.reason]));
        this.loaded = true;
        this.loadedAt = now.getTime();
        for (const [id, { at }] of this.recent) if (at < startedAt) this.recent.delete(id);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** Records a suspension this process made (its reason), or its lifting (undefined). */
  note(userId: string, suspension: Suspension | undefined): void {
    this.recent.set(userId, { reason: suspension?.reason, at: Date.now() });
  }

  private holds(userId: string): Suspension | undefined {
    const recent = this.recent.get(userId);
    if (recent) return recent.reason === undefined ? undefined : { reason: recent.reason };
    return this.ids.has(userId) ? { reason: this.ids.get(userId) ?? null } : undefined;
  }
}
