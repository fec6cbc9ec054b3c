import { and, desc, eq, gt, inArray, isNull, ne, notInArray, sql, type SQL } from "drizzle-orm";
import type { ErrorCode } from "../../platform/error-codes";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import { randomId, sha256Hex } from "../../platform/encoding";
import type { EndedSession, EndedSessions } from "../../platform/auth/ended-sessions";
import type { SignInMethod } from "../../platform/auth/session-tokens";
import { endedSessions, refreshTokens, sessions, users } from "../../../schema/index";
import { identityIdOf } from "./accounts";

// The service's own sessions. A session is a row; its refresh token is random (256 bits),
// handed to the browser once in an HttpOnly cookie and stored only as its SHA-256, and
// replaced by a new one at every refresh. A refresh token presented after it was replaced
// is someone else's copy (or a replay): the whole session ends, for the thief and the
// owner alike, and the owner signs in again. One exception keeps an honest person signed in
// when a refresh's reply was lost (a reload mid-refresh): within REFRESH_GRACE_MS of its
// replacement, while its replacement is unused, a token is answered once more, and the
// replacement it was first given is replaced too. Two holders of one session's tokens
// still end it: whichever of them presents a token the other's refresh replaced.
//
// Ended stays ended: whatever ends a session (endSessionStatements) writes a row of
// ended_sessions in the same batch that deletes it, kept until the session's last access
// token expires, and tells this process's copy of those rows (EndedSessions), so that the
// session's access tokens, which need no read to verify, are refused everywhere: here at
// once, after a restart, and by every other process or isolate that reads the rows.

/** Why a session ended. */
export type EndReason = (typeof endedSessions.$inferInsert)["reason"];

/** What ends sessions: the database, and this process's copy of the ended ones. */
export interface SessionStore {
  db: Db;
  endedSessions: EndedSessions;
}

/** The access tokens' longest lifetime (SESSION_ACCESS_TOKEN_SECONDS at most), for sessions begun before their expiry was kept. */
const LONGEST_ACCESS_TOKEN_MS = 86_400_000;
/** Beyond a token's expiry: the verifier's clock tolerance, and then some. */
const EXPIRY_MARGIN_MS = 5_000;

/**
 * The statements that end the sessions `where` selects, for the caller's batch, in this
 * order: the ended_sessions rows (returning what EndedSessions.note takes), then the deletion.
 */
export function endSessionStatements(db: Db, where: SQL | undefined, reason: EndReason, now: Date) {
  return [
    db
      .insert(endedSessions)
      .select(
        db
          .select({
            sessionId: sessions.id,
            userId: sessions.userId,
            reason: sql<string>`${reason}`.as("reason"),
            endedAt: sql<number>`${now.getTime()}`.as("ended_at"),
            tokensExpireAt: sql<number>`coalesce(${sessions.accessExpiresAt}, ${sessions.lastUsedAt} + ${LONGEST_ACCESS_TOKEN_MS}) + ${EXPIRY_MARGIN_MS}`.as("tokens_expire_at"),
          })
          .from(sessions)
          .where(where),
      )
      .onConflictDoNothing()
      .returning({ sessionId: endedSessions.sessionId, tokensExpireAt: endedSessions.tokensExpireAt }),
    db.delete(sessions).where(where),
  ] as const;
}

/** Ends the sessions `where` selects, in one batch; the ended ones. */
async function endSessions(store: SessionStore, where: SQL | undefined, reason: EndReason, now: Date): Promise<EndedSession[]> {
  const [ended] = await store.db.batch(endSessionStatements(store.db, where, reason, now));
  store.endedSessions.note(ended);
  return ended;
}

/** What a reply about a session says of its person. */
export interface AccountSummary {
  id: string;
  name: string;
  avatarUrl: string | null;
}

export interface SessionStart {
  sessionId: string;
  userId: string;
  method: SignInMethod;
  refreshToken: string;
  user: AccountSummary;
}

export interface SessionView {
  id: string;
  method: SignInMethod;
  device: string;
  createdAt: Date;
  lastUsedAt: Date;
}

const summary = (db: Db, userId: string) =>
  db.select({ id: users.id, name: users.name, avatarUrl: users.avatarUrl }).from(users).where(eq(users.id, userId)).limit(1);

const newRefreshToken = () => randomId("rt", 32);

/**
 * Begins a session on the account, for the identity that proved itself: `prepare` (what
 * creates the account on first sight) goes first in the same batch, and the person's least
 * recently used sessions past `maxSessions` end in it. One round trip.
 */
export async function startSession(
  store: SessionStore,
  options: {
    userId: string;
    identity: { issuer: string; subject: string };
    method: SignInMethod;
    device: string;
    now: Date;
    prepare: BatchItem<"sqlite">[];
    /** How long its access tokens last. */
    ttlSeconds: number;
    /** The most live sessions a person holds (SESSIONS_PER_USER). */
    maxSessions: number;
  },
): Promise<SessionStart> {
  const { db } = store;
  const { userId, method, device, now } = options;
  const sessionId = randomId("ses");
  const refreshToken = newRefreshToken();
  const accessExpiresAt = new Date(now.getTime() + options.ttlSeconds * 1000);
  // Every session of the person but the newest `maxSessions` (the new one is the newest).
  const surplus = and(
    eq(sessions.userId, userId),
    notInArray(
      sessions.id,
      db.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId)).orderBy(desc(sessions.lastUsedAt), desc(sessions.createdAt)).limit(options.maxSessions),
    ),
  );
  const [endSurplus, deleteSurplus] = endSessionStatements(db, surplus, "too-many-sessions", now);
  const results = await db.batch([
    ...options.prepare,
    db.insert(sessions).values({ id: sessionId, userId, method, identityId: identityIdOf(options.identity), device, createdAt: now, lastUsedAt: now, accessExpiresAt }),
    db.insert(refreshTokens).values({ hash: sha256Hex(refreshToken), sessionId, createdAt: now }),
    endSurplus,
    deleteSurplus,
    summary(db, userId),
  ] as unknown as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  store.endedSessions.note(results.at(-3) as EndedSession[]);
  const [user] = results.at(-1) as AccountSummary[];
  return { sessionId, userId, method, refreshToken, user: user! };
}

const ended = (code: ErrorCode, message: string) => new DomainError(code, message);

/**
 * How long after its rotation a refresh token is answered once more, as a normal refresh,
 * instead of ending its session: a refresh whose reply never arrived (a reload, a page left,
 * a phone losing signal) leaves the browser with the token the server has just replaced.
 */
export const REFRESH_GRACE_MS = 30_000;

/**
 * Whether the token that replaced the presented one (its `successorHash`) is still unused:
 * false for a token never replaced but revoked by a grace use, which has none. Spelled out
 * with an alias: the inner table has the same columns as the outer one.
 */
const successorUnused = sql`exists (select 1 from ${refreshTokens} as successor where successor.hash = ${refreshTokens}.successor_hash and successor.rotated_at is null)`;

/** Whether the presented token's session was used within the idle period (else it ends, unrenewed). */
const sessionInUse = (idleBefore: Date) =>
  sql`exists (select 1 from ${sessions} where ${sessions}.id = ${refreshTokens}.session_id and ${sessions}.last_used_at > ${idleBefore.getTime()})`;

/**
 * The statements of one refresh, for one batch: the presented token (`hash`) is claimed for
 * the new one (`successor`), either by its rotation (it was live) or by its one grace use (it
 * was replaced less than REFRESH_GRACE_MS ago, by a token still unused); whichever claimed it
 * wrote `successor` into it, which the statements after it look for. In this order:
 * the session as it was, the grace claim, the rotation, the replaced successor's revocation,
 * the new token, the session's renewal.
 */
function refreshStatements(db: Db, hash: string, successor: string, options: { now: Date; idleMs: number; ttlSeconds: number }) {
  const { now } = options;
  const inUse = sessionInUse(new Date(now.getTime() - options.idleMs));
  const claimed = db.select({ sessionId: refreshTokens.sessionId }).from(refreshTokens).where(and(eq(refreshTokens.hash, hash), eq(refreshTokens.successorHash, successor)));
  return [
    db
      .select({ sessionId: sessions.id, userId: sessions.userId, method: sessions.method, lastUsedAt: sessions.lastUsedAt, name: users.name, avatarUrl: users.avatarUrl })
      .from(refreshTokens)
      .innerJoin(sessions, eq(sessions.id, refreshTokens.sessionId))
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(eq(refreshTokens.hash, hash))
      .limit(1),
    db
      .update(refreshTokens)
      .set({ graceUsedAt: now, successorHash: successor })
      .where(
        and(
          eq(refreshTokens.hash, hash),
          gt(refreshTokens.rotatedAt, new Date(now.getTime() - REFRESH_GRACE_MS)),
          isNull(refreshTokens.graceUsedAt),
          successorUnused,
          inUse,
        ),
      )
      .returning({ sessionId: refreshTokens.sessionId }),
    db
      .update(refreshTokens)
      .set({ rotatedAt: now, successorHash: successor })
      .where(and(eq(refreshTokens.hash, hash), isNull(refreshTokens.rotatedAt), inUse))
      .returning({ sessionId: refreshTokens.sessionId }),
    // After a grace use, the token issued the first time (never received, or in a thief's
    // hands) is replaced too: presented later, it is a reuse. The new token is the session's
    // only live one.
    db
      .update(refreshTokens)
      .set({ rotatedAt: now })
      .where(and(isNull(refreshTokens.rotatedAt), inArray(refreshTokens.sessionId, claimed))),
    db.insert(refreshTokens).select(
      db
        .select({
          hash: sql<string>`${successor}`.as("hash"),
          sessionId: refreshTokens.sessionId,
          createdAt: sql<number>`${now.getTime()}`.as("created_at"),
          rotatedAt: sql<null>`null`.as("rotated_at"),
          successorHash: sql<null>`null`.as("successor_hash"),
          graceUsedAt: sql<null>`null`.as("grace_used_at"),
        })
        .from(refreshTokens)
        .where(and(eq(refreshTokens.hash, hash), eq(refreshTokens.successorHash, successor))),
    ),
    db
      .update(sessions)
      .set({ lastUsedAt: now, accessExpiresAt: new Date(now.getTime() + options.ttlSeconds * 1000) })
      .where(inArray(sessions.id, claimed)),
  ] as const;
}

/**
 * Replaces a refresh token with a new one and says whose session it is, in one round trip.
 * The old token is claimed by conditional statements, each at most once: of refreshes racing
 * with one token, the first rotates it, the second is its grace use (a token replaced less
 * than REFRESH_GRACE_MS ago is answered once more, see refreshStatements), and any other is a
 * reuse and ends the session.
 */
export async function refreshSession(
  store: SessionStore,
  token: string,
  options: { now: Date; idleMs: number; /** How long the new access token lasts. */ ttlSeconds: number },
): Promise<SessionStart & { /** Answered by the presented token's grace use, not its rotation. */ graced: boolean }> {
  const { now, idleMs } = options;
  const refreshToken = newRefreshToken();
  const [[found], graced, rotated] = await store.db.batch(refreshStatements(store.db, sha256Hex(token), sha256Hex(refreshToken), options));
  if (!found) throw ended("refresh_token_invalid", "the session has ended (signed out, ended from another device, or expired): sign in again");
  if (found.lastUsedAt.getTime() + idleMs <= now.getTime()) {
    await endSessions(store, eq(sessions.id, found.sessionId), "idle", now);
    throw ended("session_expired", `the session ended after ${Math.round(idleMs / 86_400_000)} days without use: sign in again`);
  }
  if (graced.length === 0 && rotated.length === 0) {
    await endSessions(store, eq(sessions.id, found.sessionId), "refresh-token-reused", now);
    throw ended(
      "refresh_token_reused",
      "this session's refresh token was used twice, which means a copy of it exists elsewhere, so the session was ended to protect the account: sign in again",
    );
  }
  const user = { id: found.userId, name: found.name, avatarUrl: found.avatarUrl };
  return { sessionId: found.sessionId, userId: found.userId, method: found.method, refreshToken, user, graced: graced.length > 0 };
}

/** Ends the session a refresh token belongs to (live or already rotated), if there is one. One round trip. */
export async function endSessionByToken(store: SessionStore, token: string, now: Date): Promise<void> {
  const hash = sha256Hex(token);
  await endSessions(store, sql`${sessions.id} = (select ${refreshTokens.sessionId} from ${refreshTokens} where ${refreshTokens.hash} = ${hash})`, "signed-out", now);
}

/** The person's sessions, most recently used first. */
export async function listSessions(db: Db, userId: string): Promise<SessionView[]> {
  return db
    .select({ id: sessions.id, method: sessions.method, device: sessions.device, createdAt: sessions.createdAt, lastUsedAt: sessions.lastUsedAt })
    .from(sessions)
    .where(eq(sessions.userId, userId))
    .orderBy(desc(sessions.lastUsedAt), desc(sessions.id));
}

/** Ends one of the person's sessions; another person's, or none, is not found. */
export async function endSession(store: SessionStore, userId: string, sessionId: string, now: Date): Promise<void> {
  const ended = await endSessions(store, and(eq(sessions.id, sessionId), eq(sessions.userId, userId)), "ended", now);
  if (ended.length === 0) {
    // The id is repeated only when it has the shape of one, so that nothing pasted by mistake is echoed.
    const named = /^ses_[A-Za-z0-9_-]{22}$/.test(sessionId) ? ` ${sessionId}` : "";
    throw new DomainError("session_not_found", `no such session${named} on this account (it may have ended already)`);
  }
}

/** Ends every session of the person but `keep` (the one asking, when it is a session); how many ended. */
export async function endOtherSessions(store: SessionStore, userId: string, keep: string | undefined, now: Date): Promise<number> {
  const ended = await endSessions(store, keep ? and(eq(sessions.userId, userId), ne(sessions.id, keep)) : eq(sessions.userId, userId), "ended", now);
  return ended.length;
}
