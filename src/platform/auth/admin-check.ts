import { and, eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { isAdmin, type AccountIdentifiers, type Admins } from "../admins";
import type { Db } from "../db";
import type { AppEnv } from "../deps";
import { ApiError } from "../http/errors";
import { identities, users } from "../../../schema/index";
import { WALLET_ISSUER } from "./identity-links";
import type { Principal } from "./principal";

/**
 * What ADMINS can name the caller's account by: its id, its wallets (signed in with, or
 * named by the identity provider) and its e-mail if the provider marked it verified. One
 * round trip: two reads in a batch.
 */
export async function accountIdentifiers(db: Db, principal: Principal): Promise<AccountIdentifiers> {
  const { userId } = principal;
  const [[row], wallets] = await db.batch([
    db.select({ wallet: users.wallet, email: users.email, emailVerified: users.emailVerified }).from(users).where(eq(users.id, userId)).limit(1),
    db.select({ subject: identities.subject }).from(identities).where(and(eq(identities.userId, userId), eq(identities.issuer, WALLET_ISSUER))),
  ]);
  return identifiersOf(principal, row, wallets.map((w) => w.subject));
}

/** The identifiers from the account's row and wallet sign-ins, and the token that came (a JWT's own verified e-mail). */
export function identifiersOf(
  principal: Principal,
  row: { wallet: string | null; email: string | null; emailVerified: boolean } | undefined,
  walletSignIns: string[],
): AccountIdentifiers {
  const emails = row?.email && row.emailVerified ? [row.email] : [];
  if (principal.via === "jwt" && principal.identity.email && principal.identity.emailVerified) emails.push(principal.identity.email);
  const wallets = [...walletSignIns, ...(row?.wallet ? [row.wallet] : [])];
  if (principal.via === "jwt" && principal.identity.wallet) wallets.push(principal.identity.wallet);
  return { userId: principal.userId, wallets, verifiedEmails: emails };
}

/**
 * Whether the caller is one of the admins ADMINS names, for what only they are shown (what
 * the operator must set). Never by an API key, as the console; no read when ADMINS is unset.
 */
export async function callerIsAdmin(db: Db, admins: Admins, principal: Principal | undefined): Promise<boolean> {
  if (!principal || principal.via === "api-key") return false;
  if (admins.userIds.size + admins.wallets.size + admins.emails.size === 0) return false;
  return isAdmin(admins, await accountIdentifiers(db, principal));
}

/** For the operator's console (/admin/*): anyone but an admin, and every API key, gets 403 admin_only. */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const principal = c.get("principal");
  const { db, config } = c.get("deps");
  const refuse = (why: string) => new ApiError("admin_only", `only the service's admins may use the operator's console${why}`);
  if (principal.via === "api-key") throw refuse(": API keys never may; sign in as an admin");
  if (!isAdmin(config.admins, await accountIdentifiers(db, principal))) throw refuse(" (ADMINS names them)");
  await next();
});
