import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { identities, users } from "./users";

/**
 * A signed-in device: the service's own session, begun by one proof of identity (POST
 * /auth/session) and kept alive by rotating refresh tokens. Ends when signed out, revoked,
 * idle past SESSION_IDLE_DAYS, or when one of its refresh tokens is presented twice.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text().primaryKey(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // The sign-in method that began it, and the identity it proved (removing that method
    // from the account ends the sessions it began).
    method: text({ enum: ["wallet", "provider", "local"] }).notNull(),
    identityId: text().references(() => identities.id, { onDelete: "cascade" }),
    // A coarse description of the device ("Chrome on Linux"), from its User-Agent.
    device: text().notNull(),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    lastUsedAt: integer({ mode: "timestamp_ms" }).notNull(),
    // When the last access token issued to it expires: what an ended session's row in
    // ended_sessions must outlive. Null for sessions begun before it was kept.
    accessExpiresAt: integer({ mode: "timestamp_ms" }),
  },
  // By identity: removing a sign-in method (or an account) ends its sessions through the
  // foreign key, whose check would otherwise read every session.
  (t) => [index("sessions_user_idx").on(t.userId, t.lastUsedAt), index("sessions_last_used_idx").on(t.lastUsedAt), index("sessions_identity_idx").on(t.identityId)],
);

/**
 * Sessions that ended (signed out, signed out from another device, a reused refresh token,
 * a removed sign-in method, past the most a person may hold): the database's word that
 * their access tokens, which need no read to verify, must be refused. A row lives until
 * the last access token the session was given has expired (`tokensExpireAt`); every process
 * keeps a copy of the live rows in memory (src/platform/auth/ended-sessions.ts). No foreign
 * key: the refusal must outlive the account.
 */
export const endedSessions = sqliteTable(
  "ended_sessions",
  {
    sessionId: text().primaryKey(),
    userId: text().notNull(),
    reason: text({ enum: ["signed-out", "ended", "refresh-token-reused", "idle", "method-removed", "too-many-sessions", "suspended", "erased"] }).notNull(),
    endedAt: integer({ mode: "timestamp_ms" }).notNull(),
    tokensExpireAt: integer({ mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("ended_sessions_expiry_idx").on(t.tokensExpireAt)],
);

/**
 * Every refresh token a session was given, by its SHA-256 (the token itself is never
 * stored). The live one has no `rotatedAt`; a rotated one presented again is a stolen copy
 * or a replay, and ends its session, except once within REFRESH_GRACE_MS of its rotation
 * while the token that replaced it (`successorHash`) is still unused: the answer to a
 * refresh that never arrived (src/features/sign-in/sessions.ts).
 */
export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    hash: text().primaryKey(),
    sessionId: text()
      .notNull()
      .references(() => sessions.id, { onDelete: "cascade" }),
    createdAt: integer({ mode: "timestamp_ms" }).notNull(),
    rotatedAt: integer({ mode: "timestamp_ms" }),
    // The token issued in its place (its hash): at its rotation, and again at its grace use.
    successorHash: text(),
    // When it was presented again within the grace window and answered; a token has one.
    graceUsedAt: integer({ mode: "timestamp_ms" }),
  },
  (t) => [index("refresh_tokens_session_idx").on(t.sessionId), index("refresh_tokens_rotated_idx").on(t.rotatedAt)],
);

/** Nonces of Sign-In with Ethereum messages: handed out once, used at most once, short-lived. */
export const walletNonces = sqliteTable(
  "wallet_nonces",
  {
    nonce: text().primaryKey(),
    expiresAt: integer({ mode: "timestamp_ms" }).notNull(),
    usedAt: integer({ mode: "timestamp_ms" }),
  },
  (t) => [index("wallet_nonces_expires_idx").on(t.expiresAt)],
);
