import { sql } from "drizzle-orm";
import type { Principal } from "./principal";
import type { Identity } from "./jwt";
import { bind, perDb, template, type Db, type Step } from "../db";
import { users } from "../../../schema/index";

type JwtPrincipal = Extract<Principal, { via: "jwt" }>;

/** The profile name a new user starts with: what the login offers, else a neutral one. */
export function initialName(identity: { name?: string; email?: string; wallet?: string }): string {
  const fromEmail = identity.email?.split("@")[0];
  const fromWallet = identity.wallet ? `${identity.wallet.slice(0, 6)}…${identity.wallet.slice(-4)}` : undefined;
  for (const candidate of [identity.name, fromEmail, fromWallet]) {
    // Claims are the provider's free text: drop control characters, keep at most 100 characters.
    const clean = Array.from(candidate?.replace(/\p{Cc}/gu, " ").trim() ?? "").slice(0, 100).join("").trim();
    if (clean) return clean;
  }
  return "New user";
}

/** http(s) only, with a host and no embedded credentials or whitespace, at most 2048 characters: safe as an <img src>. */
export function isSafeAvatarUrl(value: string): boolean {
  if (value.length > 2048 || /[\s\p{Cc}]/u.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== "" && !url.username && !url.password;
}

/**
 * The statement that creates the caller's user row on first sight, for the front of a
 * write batch, or null when the caller came with an API key (whose user exists already).
 * Joining the batch keeps first sight free of an extra round trip.
 */
export function ensureUser(db: Db, principal: Principal, now: Date) {
  if (principal.via !== "jwt") return null;
  return db.insert(users).values(newUser(principal.userId, principal.identity, now)).onConflictDoNothing();
}

/** ensureUser as a step of a Batch (every chat message's opening), its statement built once per handle. */
export function ensureUserStep(db: Db, principal: Principal, now: Date): Step | null {
  if (principal.via !== "jwt") return null;
  const user = newUser(principal.userId, principal.identity, now);
  return bind(ensureUserTemplate(db), { ...user, emailVerified: user.emailVerified ? 1 : 0 });
}

const ensureUserTemplate = perDb((db) =>
  template(
    db
      .insert(users)
      .values({
        id: sql.placeholder("id"),
        issuer: sql.placeholder("issuer"),
        subject: sql.placeholder("subject"),
        email: sql.placeholder("email"),
        emailVerified: sql.placeholder("emailVerified"),
        wallet: sql.placeholder("wallet"),
        name: sql.placeholder("name"),
        avatarUrl: sql.placeholder("avatarUrl"),
        createdAt: sql.placeholder("createdAt"),
      })
      .onConflictDoNothing(),
  ),
);

/**
 * The statement that creates the caller's user on first sight, or else refreshes the
 * identity details (email, wallet) from the token, returning the row either way: one
 * statement where "look up, then create" would be two round trips. A detail the token
 * does not carry is kept, not erased; the profile name is only ever seeded, never
 * overwritten.
 */
export function upsertUser(db: Db, principal: JwtPrincipal, now: Date) {
  return db
    .insert(users)
    .values(newUser(principal.userId, principal.identity, now))
    .onConflictDoUpdate({
      target: users.id,
      set: {
        email: sql`coalesce(excluded.email, ${users.email})`,
        emailVerified: sql`case when excluded.email is null then ${users.emailVerified} else excluded.email_verified end`,
        wallet: sql`coalesce(excluded.wallet, ${users.wallet})`,
      },
    })
    .returning();
}

/** The row of a new account, seeded from what the sign-in told about the person. */
export function newUser(userId: string, identity: Identity, now: Date) {
  return {
    id: userId,
    issuer: identity.issuer,
    subject: identity.subject,
    email: identity.email ?? null,
    emailVerified: identity.email !== undefined && identity.emailVerified === true,
    wallet: identity.wallet ?? null,
    name: initialName(identity),
    // A social login's picture seeds the avatar on first sight; the person may change it later.
    avatarUrl: identity.picture && isSafeAvatarUrl(identity.picture) ? identity.picture : null,
    createdAt: now,
  };
}
