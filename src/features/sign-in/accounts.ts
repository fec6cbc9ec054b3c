import { and, eq, isNull, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import { randomId } from "../../platform/encoding";
import { userIdFor } from "../../platform/auth/identity";
import type { EndedSessions } from "../../platform/auth/ended-sessions";
import type { IdentityLinks } from "../../platform/auth/identity-links";
import { suspendedMessage, type SuspendedAccounts } from "../../platform/auth/suspended-accounts";
import { ensureOwnIdentity, selectSignInMethods, toSignInMethod, type SignInMethodView } from "../../platform/auth/sign-in-methods";
import { newUser } from "../../platform/auth/users";
import { identities, sessions, users } from "../../../schema/index";
import type { ProvenIdentity } from "./proofs";
import { endSessionStatements } from "./sessions";
import { admitSignUp, type Admission, type SignUpDeps, type SignUpRequest } from "./sign-up";

// Accounts and their sign-in methods. An account is created by the first sign-in of an
// identity nobody has seen, with that identity's derived id (as a bearer token's first write
// would create it); every other identity can then be added to it, and any one removed while
// another remains. An identity belongs to one account at most: adding one that already
// belongs to another account is refused, never merged.

export interface AccountDeps extends SignUpDeps {
  db: Db;
  identityLinks: IdentityLinks;
  endedSessions: EndedSessions;
  suspendedAccounts: SuspendedAccounts;
}

/** A suspended account does not sign in (403 account_suspended): from the process's copy of the suspensions. */
async function refuseSuspended(deps: AccountDeps, userId: string, now: Date): Promise<void> {
  const found = deps.suspendedAccounts.suspension(deps.db, userId, now);
  const suspension = found instanceof Promise ? await found : found;
  if (suspension) throw new DomainError("account_suspended", suspendedMessage(suspension.reason));
}

/** The row of `identities` for (issuer, subject), as a subquery: the batch that inserts it can name it. */
export function identityIdOf(identity: { issuer: string; subject: string }): SQL<string> {
  return sql<string>`(select ${identities.id} from ${identities} where ${identities.issuer} = ${identity.issuer} and ${identities.subject} = ${identity.subject})`;
}

/**
 * The account this identity signs in to: its own, or the one it was added to, or a new one,
 * if the sign-up policy admits it (sign-up.ts: `signUp` says what the request brought for
 * that). `prepare` holds the statements that create what does not exist yet, for the front
 * of the caller's batch (so that a first sign-in costs no extra round trip).
 */
export async function accountFor(
  deps: AccountDeps,
  identity: ProvenIdentity,
  now: Date,
  signUp: SignUpRequest = {},
): Promise<{ userId: string; prepare: BatchItem<"sqlite">[] }> {
  const { db } = deps;
  let admission: Admission = { inviteId: null, planId: null };
  for (let attempt = 0; attempt < 3; attempt++) {
    const [[row], [owner]] = await db.batch([
      db.select().from(identities).where(and(eq(identities.issuer, identity.issuer), eq(identities.subject, identity.subject))).limit(1),
      db.select({ id: users.id }).from(users).where(and(eq(users.issuer, identity.issuer), eq(users.subject, identity.subject))).limit(1),
    ]);
    if (row?.userId) {
      await refuseSuspended(deps, row.userId, now);
      return { userId: row.userId, prepare: [] };
    }
    // The account's own identity, not listed yet (its account was made by a bearer token).
    if (!row && owner) {
      await refuseSuspended(deps, owner.id, now);
      return { userId: owner.id, prepare: [ensureOwnIdentity(db, owner.id)] };
    }
    // Nobody's account yet: a sign-up, which the policy may refuse.
    if (attempt === 0) admission = await admitSignUp(deps, identity, signUp, now);
    const joined = { planId: admission.planId, inviteId: admission.inviteId };
    const derived = await userIdFor(identity.issuer, identity.subject);
    if (!row) {
      return {
        userId: derived,
        prepare: [
          db.insert(users).values({ ...newUser(derived, identity, now), ...joined }).onConflictDoNothing(),
          db.insert(identities).values(identityRow(identity, derived, true, now)).onConflictDoNothing(),
        ],
      };
    }
    // Removed from the account it named, and back: that account keeps its id, so a new one
    // takes a random id and the identity becomes one of the exceptions bearer tokens consult.
    const userId = randomId("usr");
    const [, claimed] = await db.batch([
      db.insert(users).values({ ...newUser(userId, identity, now), ...joined }),
      db
        .update(identities)
        .set({ userId, ownId: false, label: identity.label })
        .where(and(eq(identities.id, row.id), isNull(identities.userId)))
        .returning({ id: identities.id }),
    ]);
    if (claimed.length > 0) {
      deps.identityLinks.noteLink(identity.issuer, identity.subject, userId);
      return { userId, prepare: [] };
    }
    await db.delete(users).where(eq(users.id, userId)); // another sign-in claimed it first: take that account
  }
  throw new Error("the identity's account could not be settled");
}

function identityRow(identity: ProvenIdentity, userId: string, ownId: boolean, now: Date) {
  return { id: randomId("idn"), userId, issuer: identity.issuer, subject: identity.subject, ownId, label: identity.label, createdAt: now };
}

/**
 * Adds a sign-in method to the account. Already this account's: nothing changes (created
 * false). Another account's: refused (409), never merged.
 */
export async function addSignInMethod(
  deps: AccountDeps,
  userId: string,
  identity: ProvenIdentity,
  now: Date,
): Promise<{ method: SignInMethodView; created: boolean }> {
  const { db } = deps;
  const [, [row], [owner]] = await db.batch([
    ensureOwnIdentity(db, userId),
    db.select().from(identities).where(and(eq(identities.issuer, identity.issuer), eq(identities.subject, identity.subject))).limit(1),
    db.select({ id: users.id }).from(users).where(and(eq(users.issuer, identity.issuer), eq(users.subject, identity.subject))).limit(1),
  ]);
  if (row?.userId === userId) return { method: toSignInMethod(row), created: false };
  const inUse = () =>
    new DomainError(
      "identity_in_use",
      `${identity.method === "wallet" ? `the wallet ${identity.label}` : `this ${identity.method === "local" ? "name" : "identity provider account"}`} already signs in to another account: sign in with it and remove it there first, or use another`,
    );
  if (row?.userId || owner) throw inUse();
  const ownId = (await userIdFor(identity.issuer, identity.subject)) === userId;
  let added: typeof identities.$inferSelect | undefined;
  if (row) {
    // Removed from an account earlier: free to join this one.
    [added] = await db
      .update(identities)
      .set({ userId, ownId, label: identity.label, createdAt: now })
      .where(and(eq(identities.id, row.id), isNull(identities.userId)))
      .returning();
  } else {
    [added] = await db.insert(identities).values(identityRow(identity, userId, ownId, now)).onConflictDoNothing().returning();
  }
  if (!added) throw inUse(); // another account took it meanwhile
  deps.identityLinks.noteLink(identity.issuer, identity.subject, userId);
  return { method: toSignInMethod(added), created: true };
}

/**
 * Removes a sign-in method while another remains, and ends the sessions it began but `keep`
 * (the one asking: the person is plainly there); their ids are returned, so that their access
 * tokens stop working here at once. The method that named the account keeps a row without an
 * account, so that its tokens no longer reach it.
 */
export async function removeSignInMethod(
  deps: Pick<AccountDeps, "db" | "identityLinks" | "endedSessions">,
  userId: string,
  identityId: string,
  now: Date,
  keep?: string,
): Promise<void> {
  const { db } = deps;
  const [, rows, [account]] = await db.batch([
    ensureOwnIdentity(db, userId),
    selectSignInMethods(db, userId),
    db.select({ issuer: users.issuer, subject: users.subject }).from(users).where(eq(users.id, userId)).limit(1),
  ]);
  const target = rows.find((r) => r.id === identityId);
  if (!target) {
    const named = /^idn_[A-Za-z0-9_-]{22}$/.test(identityId) ? ` ${identityId}` : "";
    throw new DomainError("identity_not_found", `no such sign-in method${named} on this account`);
  }
  const others = rows.filter((r) => r.id !== identityId);
  const lastOne = () =>
    new DomainError("last_sign_in_method", "this is the account's only sign-in method: add another before removing it");
  if (others.length === 0) throw lastOne();

  // Each statement is guarded in SQL too, and the guard is read before the change (the
  // last statement), so that two removals at once cannot leave the account with none.
  const othersRemain = sql`(select count(*) from ${identities} where ${identities.userId} = ${userId}) > 1`;
  const isMain = account && account.issuer === target.issuer && account.subject === target.subject;
  const next = others[0]!;
  const [endBegun, deleteBegun] = endSessionStatements(
    db,
    and(eq(sessions.identityId, target.id), keep ? ne(sessions.id, keep) : undefined, othersRemain),
    "method-removed",
    now,
  );
  const [ended, , ...rest] = await db.batch([
    endBegun,
    deleteBegun,
    // The session asking goes on; it no longer names the method (whose row may go below).
    db.update(sessions).set({ identityId: null }).where(and(eq(sessions.identityId, target.id), othersRemain)),
    // The account's main identity (GET /me `identity`) moves to one that remains.
    ...(isMain ? [db.update(users).set({ issuer: next.issuer, subject: next.subject }).where(and(eq(users.id, userId), othersRemain))] : []),
    target.ownId
      ? db.update(identities).set({ userId: null }).where(and(eq(identities.id, target.id), othersRemain)).returning({ id: identities.id })
      : db.delete(identities).where(and(eq(identities.id, target.id), othersRemain)).returning({ id: identities.id }),
  ]);
  deps.endedSessions.note(ended);
  const changed = rest.at(-1) as unknown[];
  if (changed.length === 0) throw lastOne();
  deps.identityLinks.noteLink(target.issuer, target.subject, target.ownId ? null : await userIdFor(target.issuer, target.subject));
}
