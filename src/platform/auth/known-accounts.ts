import { eq } from "drizzle-orm";
import type { Db } from "../db";
import { users } from "../../../schema/index";

/**
 * Whether an account exists, for SIGN_UP=invite and closed: there, an identity provider's
 * token of someone with no account must not create one by its first write (as it does where
 * sign-up is open), so a provider's bearer token is checked against `users` once. Only
 * existing accounts are remembered (for a few minutes, at most 10,000): forgetting one costs a
 * read, and an account that was not there is asked again every time, so this can only
 * spare reads, never let someone in.
 */
export class KnownAccounts {
  private static readonly MAX_ENTRIES = 10_000;
  private static readonly MAX_AGE_MS = 5 * 60_000;
  private readonly seen = new Map<string, number>();

  async exists(db: Db, userId: string, now: Date): Promise<boolean> {
    const t = now.getTime();
    const until = this.seen.get(userId);
    if (until !== undefined && until > t) return true;
    const [row] = await db.select({ id: users.id }).from(users).where(eq(users.id, userId)).limit(1);
    if (!row) return false;
    if (this.seen.size >= KnownAccounts.MAX_ENTRIES) this.seen.clear();
    this.seen.set(userId, t + KnownAccounts.MAX_AGE_MS);
    return true;
  }
}
