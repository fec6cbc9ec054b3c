import { gt } from "drizzle-orm";
import type { Db } from "../db";
import { endedSessions } from "../../../schema/index";

/** A session that ended, and until when its access tokens could still be presented. */
export interface EndedSession {
  sessionId: string;
  tokensExpireAt: Date;
}

/**
 * The sessions whose access tokens must be refused. A session's access token needs no
 * database read to verify (it is signed, and names its session), so ending a session writes
 * a row of `ended_sessions` (src/features/sign-in/sessions.ts), and every process keeps a
 * copy of the rows that can still matter: those whose session's last access token has not
 * expired yet. The copy is the database's rows, never fewer: it is read whole at start and
 * again when older than `maxAgeMs`, takes in at once what this process ends, and forgets an
 * entry only once its tokens have expired, never to make room. So no restart, eviction or
 * number of other ended sessions turns a refusal back into an acceptance.
 *
 * Node (one process over its embedded file, which only it writes): read at start, then never
 * again (`maxAgeMs` Infinity): it sees every ending as it happens. A Worker isolate: read at
 * its first session token and again when the copy is older than `maxAgeMs`, before answering,
 * so an isolate refuses a session another one ended within `maxAgeMs` (docs/limits-and-errors.md).
 */
export class EndedSessions {
  private readonly until = new Map<string, number>();
  private loaded = false;
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** The size at which expired entries are next swept out (doubling, so sweeps cost O(1) per entry). */
  private sweepAt = 1024;

  constructor(private readonly maxAgeMs: number) {}

  /**
   * Whether the session has ended, at `now`: at once from the copy, or once the copy has
   * been read again when it is too old (a promise). A read that fails rejects: a session is
   * never taken for live for want of the rows.
   */
  isEnded(db: Db, sessionId: string, now: Date): boolean | Promise<boolean> {
    if (!this.loaded || now.getTime() - this.loadedAt > this.maxAgeMs) return this.load(db, now).then(() => this.holds(sessionId, now));
    if (this.until.size >= this.sweepAt) this.sweep(now.getTime());
    return this.holds(sessionId, now);
  }

  /** Reads the live rows (one indexed query) into the copy, which keeps what it had. */
  load(db: Db, now: Date): Promise<void> {
    this.loading ??= (async () => {
      try {
        const rows = await db
          .select({ sessionId: endedSessions.sessionId, tokensExpireAt: endedSessions.tokensExpireAt })
          .from(endedSessions)
          .where(gt(endedSessions.tokensExpireAt, now));
        this.note(rows);
        this.sweep(now.getTime());
        this.loaded = true;
        // Dated from before the read: what ends while it runs is read again next time (or noted here).
        this.loadedAt = now.getTime();
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** Takes in sessions ended by this process (the rows it has just written). */
  note(ended: readonly EndedSession[]): void {
    for (const { sessionId, tokensExpireAt } of ended) {
      const t = tokensExpireAt.getTime();
      if (!(t <= (this.until.get(sessionId) ?? -Infinity))) this.until.set(sessionId, t);
    }
  }

  /** How many sessions the copy refuses now (for tests and logs). */
  get size(): number {
    return this.until.size;
  }

  private holds(sessionId: string, now: Date): boolean {
    const t = this.until.get(sessionId);
    return t !== undefined && t > now.getTime();
  }

  /** Forgets the sessions whose tokens have all expired, by the clock tokens are checked with: by expiry only. */
  private sweep(nowMs: number): void {
    for (const [id, t] of this.until) if (t <= nowMs) this.until.delete(id);
    this.sweepAt = Math.max(1024, this.until.size * 2);
  }
}
