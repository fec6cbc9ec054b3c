import { and, ne, sql } from "drizzle-orm";
import type { Db } from "../db";
import { identities } from "../../../schema/index";
import { userIdFor } from "./identity";

/** The issuer of wallet identities (Sign-In with Ethereum): EIP-155's namespace, one identity on every chain. */
export const WALLET_ISSUER = "eip155";

/**
 * Which account a bearer token's identity (iss, sub) signs in to, with no database read on
 * the common path. An identity that created its account names it: the account id is
 * derived from (iss, sub) (identity.ts). The exceptions are identities linked to another
 * account, and the one that created an account and was then removed from it: each process
 * keeps them all in memory (the rows of `identities` whose `ownId` is false or whose account
 * is gone, and only they are in a partial index), read once at start and again when older
 * than `maxAgeMs`, in the background. Links made by this process apply here at once; those made elsewhere (another
 * Workers isolate) within `maxAgeMs`. Wallet identities are left out: they only ever sign in
 * through POST /auth/session, which reads the table itself.
 */
export class IdentityLinks {
  private exceptions: Map<string, string | null> | undefined;
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** Links this process made, which a snapshot read before them must not undo. */
  private readonly recent = new Map<string, { userId: string | null; at: number }>();

  constructor(private readonly maxAgeMs: number) {}

  /**
   * The account of this identity, or null when it was removed from its account (its token
   * must not reach it). `defer` runs a background refresh past the request (Workers'
   * waitUntil) when the snapshot is old.
   */
  async accountOf(db: Db, issuer: string, subject: string, defer: (work: Promise<void>) => void): Promise<string | null> {
    if (!this.exceptions) await this.load(db);
    else if (Date.now() - this.loadedAt > this.maxAgeMs && !this.loading) defer(this.load(db).catch(() => {}));
    const key = keyOf(issuer, subject);
    const recent = this.recent.get(key);
    if (recent) return recent.userId;
    const linked = this.exceptions!.get(key);
    return linked !== undefined ? linked : userIdFor(issuer, subject);
  }

  /** Reads the exceptions afresh: one query over the partial index. */
  load(db: Db): Promise<void> {
    this.loading ??= (async () => {
      const startedAt = Date.now();
      try {
        const rows = await db
          .select({ issuer: identities.issuer, subject: identities.subject, userId: identities.userId })
          .from(identities)
          // Literals, as the partial index says them: a bound parameter would not let SQLite use it.
          // A removed identity (no account) counts whatever its ownId: its tokens reach no account.
          .where(and(sql`(${identities.ownId} = 0 or ${identities.userId} is null)`, ne(identities.issuer, WALLET_ISSUER)));
        this.exceptions = new Map(rows.map((r) => [keyOf(r.issuer, r.subject), r.userId]));
        this.loadedAt = startedAt;
        // What this process wrote before the read began is in it now.
        for (const [key, { at }] of this.recent) if (at < startedAt) this.recent.delete(key);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** Records a change this process made: the identity now signs in to `userId` (null: to none). */
  noteLink(issuer: string, subject: string, userId: string | null): void {
    if (issuer === WALLET_ISSUER) return;
    this.recent.set(keyOf(issuer, subject), { userId, at: Date.now() });
  }
}

const keyOf = (issuer: string, subject: string) => `${issuer}\u0000${subject}`;
