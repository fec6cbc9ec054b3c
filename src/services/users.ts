import type { Principal } from "../auth/credentials";
import type { Db } from "../db";
import { users } from "../../schema/index";

/** The profile name a new user starts with: what the login offers, else a neutral one. */
export function initialName(identity: { name?: string; email?: string; wallet?: string }): string {
  const fromEmail = identity.email?.split("@")[0];
  const fromWallet = identity.wallet ? `${identity.wallet.slice(0, 6)}…${identity.wallet.slice(-4)}` : undefined;
  return (identity.name ?? fromEmail ?? fromWallet ?? "New user").slice(0, 100);
}

/**
 * The statement that creates the caller's user row on first sight, for the front of a
 * write batch, or null when the caller came with an API key (whose user exists already).
 * Joining the batch keeps first sight free of an extra round trip.
 */
export function ensureUser(db: Db, principal: Principal, now: Date) {
  if (principal.via !== "jwt") return null;
  const { identity } = principal;
  return db
    .insert(users)
    .values({
      id: principal.userId,
      issuer: identity.issuer,
      subject: identity.subject,
      email: identity.email ?? null,
      wallet: identity.wallet ?? null,
      name: initialName(identity),
      createdAt: now,
    })
    .onConflictDoNothing();
}
