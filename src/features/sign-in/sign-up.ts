import { and, gt, isNull, or, sql } from "drizzle-orm";
import type { Config } from "../../platform/config";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import { sha256Hex } from "../../platform/encoding";
import type { Logger } from "../../platform/log";
import { clientKey } from "../../platform/auth/rate-limit";
import { invites, signUpCounts } from "../../../schema/index";
import type { ProvenIdentity } from "./proofs";
import { verifyTurnstile } from "./turnstile";

// ---------------------------------------------------------------------------------------
// Who may create an account: the operator's policy (SIGN_UP), checked where a sign-in would
// make an account nobody has yet (accounts.ts), never for an existing one. In order:
// - closed: nobody new; invite: a code (SHA-256 in `invites`) with uses left, used up last;
// - for the proofs this service alone vouches for (a wallet, a bare name: anyone can make
//   as many as they like), Turnstile when it is configured, then SIGN_UPS_PER_ADDRESS_PER_HOUR
//   per client address, counted in the database. An identity provider's accounts are the
//   provider's to gate (it has its own sign-up protection), except for the policy itself.
// Turnstile goes before the count, so that a script without a solved challenge cannot use up
// an address's sign-ups; the count before the invite, so that a refusal costs no invite use.
// ---------------------------------------------------------------------------------------

/** What a request brings for a sign-up, beside its proof. */
export interface SignUpRequest {
  /** The client's address (docs/limits-and-errors.md), when it is known. */
  clientAddress?: string;
  inviteCode?: string;
  turnstileToken?: string;
}

export interface SignUpDeps {
  db: Db;
  config: Pick<Config, "SIGN_UP" | "SIGN_UPS_PER_ADDRESS_PER_HOUR" | "TURNSTILE_SECRET_KEY" | "TURNSTILE_VERIFY_URL">;
  log: Logger;
}

const HOUR_MS = 3_600_000;

/** What admitted a new account: the invite it used, if any, and the plan that invite puts it on. */
export interface Admission {
  inviteId: string | null;
  planId: string | null;
}

/** Throws the refusal when the policy does not admit a new account for `identity`; else uses up what admitted it. */
export async function admitSignUp(deps: SignUpDeps, identity: ProvenIdentity, request: SignUpRequest, now: Date): Promise<Admission> {
  const { config } = deps;
  if (config.SIGN_UP === "closed") {
    throw new DomainError("sign_up_closed", "this service is not taking new accounts: only existing accounts sign in; ask its operator for one");
  }
  if (config.SIGN_UP === "invite" && !request.inviteCode) {
    throw new DomainError("invite_required", "new accounts need an invite here: enter the invite code you were given, then sign in again", { field: "inviteCode" });
  }
  if (identity.method !== "provider") {
    if (config.TURNSTILE_SECRET_KEY) await verifyTurnstile(deps, request.turnstileToken, request.clientAddress);
    await countSignUp(deps, request.clientAddress, now);
  }
  if (config.SIGN_UP === "invite") return useInvite(deps.db, request.inviteCode!, now);
  return { inviteId: null, planId: null };
}

/**
 * Counts a new account against its client's address for this hour, in one conditional
 * statement (as credits are debited): past the limit it counts nothing and refuses, with the
 * seconds to the next hour. An unknown address (a request from no socket: tests) is not counted.
 */
async function countSignUp(deps: SignUpDeps, address: string | undefined, now: Date): Promise<void> {
  const limit = deps.config.SIGN_UPS_PER_ADDRESS_PER_HOUR;
  if (limit === 0 || !address) return;
  const windowStart = now.getTime() - (now.getTime() % HOUR_MS);
  const counted = await deps.db
    .insert(signUpCounts)
    .values({ client: clientKey(address), windowStart, count: 1 })
    .onConflictDoUpdate({
      target: [signUpCounts.client, signUpCounts.windowStart],
      set: { count: sql`${signUpCounts.count} + 1` },
      setWhere: sql`${signUpCounts.count} < ${limit}`,
    })
    .returning({ count: signUpCounts.count });
  if (counted.length > 0) return;
  const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + HOUR_MS - now.getTime()) / 1000));
  const minutes = Math.ceil(retryAfterSeconds / 60);
  throw new DomainError(
    "sign_up_limited",
    `too many new accounts from this network in the last hour (at most ${limit}): sign in with an account you already have, or create this one in ${minutes} minute${minutes === 1 ? "" : "s"}`,
    { retryAfterSeconds },
  );
}

/** Uses up one use of a live invite, by its code's SHA-256; an unknown, spent or expired code is refused. */
async function useInvite(db: Db, code: string, now: Date): Promise<Admission> {
  const used = await db
    .update(invites)
    .set({ usesLeft: sql`${invites.usesLeft} - 1` })
    .where(and(sql`${invites.codeHash} = ${sha256Hex(code.trim())}`, gt(invites.usesLeft, 0), or(isNull(invites.expiresAt), gt(invites.expiresAt, now))))
    .returning({ id: invites.id, planId: invites.planId });
  if (used.length === 0) {
    throw new DomainError("invite_invalid", "this invite code is not valid: it is mistyped, used up or expired; check it, or ask for a new one", {
      field: "inviteCode",
    });
  }
  return { inviteId: used[0]!.id, planId: used[0]!.planId };
}
