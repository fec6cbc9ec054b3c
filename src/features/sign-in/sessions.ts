import type { ErrorCode } from "../../platform/error-codes";
import { and, desc, eq, isNull, ne } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import { randomId, sha256Hex } from "../../platform/encoding";
import type { SignInMethod } from "../../platform/auth/session-tokens";
import { refreshTokens, sessions, users } from "../../../schema/index";
import { identityIdOf } from "./accounts";

// The service's own sessions. A session is a row; its refresh token is random (256 bits),
// handed to the browser once in an HttpOnly cookie and stored only as its SHA-256, and
// replaced by a new one at every refresh. A refresh token presented after it was replaced
// is someone else's copy (or a replay): the whole session ends, for the thief and the
// owner alike, and the owner signs in again.

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
 * creates the account on first sight) goes first in the same batch. One round trip.
 */
export async function startSession(
  db: Db,
  options: { userId: string; identity: { issuer: string; subject: string }; method: SignInMethod; device: string; now: Date; prepare: BatchItem<"sqlite">[] },
): Promise<SessionStart> {
  const { userId, method, device, now } = options;
  const sessionId = randomId("ses");
  const refreshToken = newRefreshToken();
  const results = await db.batch([
    ...options.prepare,
    db.insert(sessions).values({ id: sessionId, userId, method, identityId: identityIdOf(options.identity), device, createdAt: now, lastUsedAt: now }),
    db.insert(refreshTokens).values({ hash: await sha256Hex(refreshToken), sessionId, createdAt: now }),
    summary(db, userId),
  ] as unknown as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const [user] = results.at(-1) as AccountSummary[];
  return { sessionId, userId, method, refreshToken, user: user! };
}

const ended = (code: ErrorCode, message: string) => new DomainError(code, message);

/**
 * Replaces a refresh token with a new one and says whose session it is. The old token is
 * marked rotated by a conditional statement, so of two refreshes racing with one token
 * only one succeeds; the other is a reuse and ends the session.
 */
export async function refreshSession(
  db: Db,
  token: string,
  options: { now: Date; idleMs: number; /** Told the id of a session the refresh ended. */ onEnded: (sessionId: string) => void },
): Promise<SessionStart> {
  const { now, idleMs } = options;
  const hash = await sha256Hex(token);
  const [rotated, [found]] = await db.batch([
    db
      .update(refreshTokens)
      .set({ rotatedAt: now })
      .where(and(eq(refreshTokens.hash, hash), isNull(refreshTokens.rotatedAt)))
      .returning({ sessionId: refreshTokens.sessionId }),
    db
      .select({ sessionId: sessions.id, userId: sessions.userId, method: sessions.method, lastUsedAt: sessions.lastUsedAt })
      .from(refreshTokens)
      .innerJoin(sessions, eq(sessions.id, refreshTokens.sessionId))
      .where(eq(refreshTokens.hash, hash))
      .limit(1),
  ]);
  if (!found) throw ended("refresh_token_invalid", "the session has ended (signed out, ended from another device, or expired): sign in again");
  if (rotated.length === 0) {
    await db.delete(sessions).where(eq(sessions.id, found.sessionId));
    options.onEnded(found.sessionId);
    throw ended(
      "refresh_token_reused",
      "this session's refresh token was used twice, which means a copy of it exists elsewhere, so the session was ended to protect the account: sign in again",
    );
  }
  if (found.lastUsedAt.getTime() + idleMs <= now.getTime()) {
    await db.delete(sessions).where(eq(sessions.id, found.sessionId));
    options.onEnded(found.sessionId);
    throw ended("session_expired", `the session ended after ${Math.round(idleMs / 86_400_000)} days without use: sign in again`);
  }
  const refreshToken = newRefreshToken();
  const [, , [user]] = await db.batch([
    db.insert(refreshTokens).values({ hash: await sha256Hex(refreshToken), sessionId: found.sessionId, createdAt: now }),
    db.update(sessions).set({ lastUsedAt: now }).where(eq(sessions.id, found.sessionId)),
    summary(db, found.userId),
  ]);
  return { sessionId: found.sessionId, userId: found.userId, method: found.method, refreshToken, user: user! };
}

/** Ends the session a refresh token belongs to (live or already rotated); its id, or null when there is none. */
export async function endSessionByToken(db: Db, token: string): Promise<string | null> {
  const hash = await sha256Hex(token);
  const [row] = await db.select({ sessionId: refreshTokens.sessionId }).from(refreshTokens).where(eq(refreshTokens.hash, hash)).limit(1);
  if (!row) return null;
  await db.delete(sessions).where(eq(sessions.id, row.sessionId));
  return row.sessionId;
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
export async function endSession(db: Db, userId: string, sessionId: string): Promise<void> {
  const deleted = await db.delete(sessions).where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId))).returning({ id: sessions.id });
  if (deleted.length === 0) {
    // The id is repeated only when it has the shape of one, so that nothing pasted by mistake is echoed.
    const named = /^ses_[A-Za-z0-9_-]{22}$/.test(sessionId) ? ` ${sessionId}` : "";
    throw new DomainError("session_not_found", `no such session${named} on this account (it may have ended already)`);
  }
}

/** Ends every session of the person but `keep` (the one asking, when it is a session); their ids. */
export async function endOtherSessions(db: Db, userId: string, keep: string | undefined): Promise<string[]> {
  const deleted = await db
    .delete(sessions)
    .where(keep ? and(eq(sessions.userId, userId), ne(sessions.id, keep)) : eq(sessions.userId, userId))
    .returning({ id: sessions.id });
  return deleted.map((s) => s.id);
}
