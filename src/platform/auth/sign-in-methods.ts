import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../db";
import { randomId } from "../encoding";
import { identities, users } from "../../../schema/index";
import { WALLET_ISSUER } from "./identity-links";
import { LOCAL_ISSUER } from "./local-login";
import type { SignInMethod } from "./session-tokens";

/** One way a person signs in to their account, as GET /me lists it. */
export interface SignInMethodView {
  id: string;
  method: SignInMethod;
  issuer: string;
  subject: string;
  /** What a person recognises it by: the address, the e-mail, the name. */
  label: string;
  createdAt: Date;
}

export function methodOf(issuer: string): SignInMethod {
  return issuer === WALLET_ISSUER ? "wallet" : issuer === LOCAL_ISSUER ? "local" : "provider";
}

/**
 * The statement that gives the account's own identity (users.issuer/subject) its row in
 * `identities` if it has none yet (an account made by a bearer token's first write has
 * none), for the front of a batch that reads or changes the account's sign-in methods.
 * That identity named the account, so its row says so (`ownId`).
 */
export function ensureOwnIdentity(db: Db, userId: string) {
  return db
    .insert(identities)
    .select(
      db
        .select({
          id: sql<string>`${randomId("idn")}`.as("id"),
          userId: users.id,
          issuer: users.issuer,
          subject: users.subject,
          ownId: sql<boolean>`1`.as("own_id"),
          label: sql<string>`coalesce(${users.wallet}, ${users.email}, ${users.name})`.as("label"),
          createdAt: users.createdAt,
        })
        .from(users)
        .where(eq(users.id, userId)),
    )
    .onConflictDoNothing();
}

/** The account's sign-in methods, oldest first (in the order added, within the same millisecond). */
export function selectSignInMethods(db: Db, userId: string) {
  return db.select().from(identities).where(eq(identities.userId, userId)).orderBy(asc(identities.createdAt), sql`rowid`);
}

export function toSignInMethod(row: typeof identities.$inferSelect): SignInMethodView {
  return {
    id: row.id,
    method: methodOf(row.issuer),
    issuer: row.issuer,
    subject: row.subject,
    label: row.label ?? row.subject,
    createdAt: row.createdAt,
  };
}
