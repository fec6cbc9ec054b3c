import { and, eq, lt, lte } from "drizzle-orm";
import type { BlobStore } from "../platform/blob-store";
import type { Config } from "../platform/config";
import type { Db } from "../platform/db";
import type { Logger } from "../platform/log";
import { utcDay, utcDayBefore } from "../features/account/credits";
import { deleteUnsentUploads } from "../features/attachments/attachments";
import { sweepUnnamedFiles, type SweepResult } from "../features/attachments/file-sweep";
import { releaseStaleStatements, staleBefore } from "../features/chat/holds";
import { IDEMPOTENCY_TTL_MS } from "../features/chat/idempotency";
import { pruneTimingStatements } from "../features/chat/model-speed";
import { INDEX_BATCH, indexPendingSearch } from "../features/contexts/search";
import { minuteOf } from "../features/chat/plan-rate";
import { pruneRollupStatements, USAGE_ROLLUP_DAYS } from "../features/account/usage-rollups";
import { chatMinutes, creditDays, endedSessions, idempotencyKeys, refreshTokens, sessions, shares, signUpCounts, usageEvents, walletNonces } from "../../schema/index";

export interface RolloverDeps {
  db: Db;
  log: Logger;
  now: () => Date;
  config: Pick<Config, "MODEL_TIMEOUT_MS" | "SESSION_IDLE_DAYS">;
  /** Attachments' bytes: unsent uploads' files are removed with their rows, and files no row names are swept. */
  blobs?: BlobStore;
}

/** How far back usage history is kept: what GET /usage?days=90 can show. */
export const USAGE_HISTORY_DAYS = 90;

export interface RolloverResult {
  /** The UTC day the run belongs to (the day that just began). */
  day: string;
  /** Idempotency records older than 24 hours, removed. */
  expiredIdempotencyKeys: number;
  /** Finished days whose charges were all refunded (used 0): the same as no row. */
  emptyDaysClosed: number;
  /** Day totals and per-message records older than the history window, removed. */
  prunedDays: number;
  prunedUsageEvents: number;
  /** Share links past their expiry (already 404), whose snapshots are removed. */
  expiredShares: number;
  /** Credit holds of exchanges whose process died, refunded to the day they were charged on. */
  releasedHolds: number;
  /** Search entries that were still waiting to be indexed (see src/features/contexts/search.ts). */
  indexedSearchEntries: number;
  /** Models' exchange timings past the measured window (src/features/chat/model-speed.ts). */
  prunedModelTimings: number;
  /** Sessions unused for SESSION_IDLE_DAYS (already refused at refresh), removed with their refresh tokens. */
  expiredSessions: number;
  /**
   * Refresh tokens replaced more than SESSION_IDLE_DAYS ago: kept until then so that a stolen
   * copy presented later still ends its session; after, it is only an unknown token.
   */
  prunedRefreshTokens: number;
  /** Wallet sign-in nonces past their expiry. */
  expiredWalletNonces: number;
  /** Ended sessions whose last access token has expired: nothing is left to refuse. */
  prunedEndedSessions: number;
  /** Sign-up counts of past hours (SIGN_UPS_PER_ADDRESS_PER_HOUR). */
  prunedSignUpCounts: number;
  /** Model calls counted in past minutes (plans' requestsPerMinute) of accounts that made none since. */
  prunedChatMinutes: number;
  /** Usage rollup rows past USAGE_ROLLUP_DAYS (two years: what GET /admin/usage reaches back to). */
  prunedUsageRollups: number;
  /** Uploads older than a day that no message carries, removed with their files. */
  deletedUnsentUploads: number;
  /** Attachments' stored files the sweep looked at (a bounded part of the store per run, src/features/attachments/file-sweep.ts). */
  examinedAttachmentFiles: number;
  /** Of those, files that no attachment row names (left by a crash or a failed removal), removed. */
  removedUnnamedFiles: number;
}

/**
 * The daily job (Workers cron `0 0 * * *`, the Node server's midnight timer). Credits need
 * no reset: a new UTC day simply has no row yet, and each day's row already is that day's
 * usage history. So closing the finished day only tidies up: a finished day left at 0 by
 * refunds is dropped (GET /usage shows absent days as 0 anyway), history past the window
 * expired idempotency records and the snapshots of expired share links are pruned. Every step is a delete by a threshold
 * computed from `scheduledTime` (not the wall clock), and today's row is never touched:
 * running it twice, late, or after missed days changes nothing that is already right.
 * First, though, it releases abandoned credit holds (src/features/chat/holds.ts): those are stale
 * by the wall clock, whenever the job runs, and their refunds must land before empty
 * days are closed. Last, it removes uploads never sent, then sweeps a bounded part of the
 * attachments' stored files for any that no row names (src/features/attachments/file-sweep.ts).
 */
export async function runDailyRollover(deps: RolloverDeps, options: { scheduledTime?: Date } = {}): Promise<RolloverResult> {
  const { db } = deps;
  const at = options.scheduledTime ?? deps.now();
  const today = utcDay(at);
  const oldestKept = utcDayBefore(at, USAGE_HISTORY_DAYS - 1);
  const stale = releaseStaleStatements(db, { before: staleBefore(deps.config, deps.now()).getTime() });
  const [oldTimings, surplusTimings] = pruneTimingStatements(db, at);
  const idleBefore = new Date(at.getTime() - deps.config.SESSION_IDLE_DAYS * 86_400_000);
  const [, , , , , holds, keys, empty, days, events, expiredShares, old, surplus, idleSessions, rotatedTokens, nonces, ended, signUps, minutes, ...rollups] = await db.batch([
    ...stale.first,
    stale.remove,
    db
      .delete(idempotencyKeys)
      .where(lte(idempotencyKeys.createdAt, new Date(at.getTime() - IDEMPOTENCY_TTL_MS)))
      .returning({ key: idempotencyKeys.key }),
    db
      .delete(creditDays)
      .where(and(lt(creditDays.day, today), eq(creditDays.used, 0)))
      .returning({ day: creditDays.day }),
    db.delete(creditDays).where(lt(creditDays.day, oldestKept)).returning({ day: creditDays.day }),
    db
      .delete(usageEvents)
      .where(lt(usageEvents.at, new Date(`${oldestKept}T00:00:00.000Z`)))
      .returning({ id: usageEvents.id }),
    db.delete(shares).where(lte(shares.expiresAt, at)).returning({ token: shares.token }),
    oldTimings,
    surplusTimings,
    db.delete(sessions).where(lte(sessions.lastUsedAt, idleBefore)).returning({ id: sessions.id }),
    db.delete(refreshTokens).where(lte(refreshTokens.rotatedAt, idleBefore)).returning({ hash: refreshTokens.hash }),
    db.delete(walletNonces).where(lte(walletNonces.expiresAt, at)).returning({ nonce: walletNonces.nonce }),
    db.delete(endedSessions).where(lte(endedSessions.tokensExpireAt, at)).returning({ id: endedSessions.sessionId }),
    db.delete(signUpCounts).where(lte(signUpCounts.windowStart, at.getTime() - 3_600_000)).returning({ client: signUpCounts.client }),
    db.delete(chatMinutes).where(lt(chatMinutes.minute, minuteOf(at))).returning({ minute: chatMinutes.minute }),
    ...pruneRollupStatements(db, utcDayBefore(at, USAGE_ROLLUP_DAYS - 1)),
  ]);
  const indexedSearchEntries = await indexAllPendingSearch(db);
  const deletedUnsentUploads = await deleteUnsentUploads(deps, at);
  const swept = await sweepFiles(deps, at);
  const result: RolloverResult = {
    day: today,
    expiredIdempotencyKeys: keys.length,
    emptyDaysClosed: empty.length,
    prunedDays: days.length,
    prunedUsageEvents: events.length,
    expiredShares: expiredShares.length,
    releasedHolds: holds.length,
    indexedSearchEntries,
    prunedModelTimings: old.length + surplus.length,
    expiredSessions: idleSessions.length,
    prunedRefreshTokens: rotatedTokens.length,
    expiredWalletNonces: nonces.length,
    prunedEndedSessions: ended.length,
    prunedSignUpCounts: signUps.length,
    prunedChatMinutes: minutes.length,
    prunedUsageRollups: rollups.reduce((n, rows) => n + rows.length, 0),
    deletedUnsentUploads,
    examinedAttachmentFiles: swept.examinedFiles,
    removedUnnamedFiles: swept.removedUnnamedFiles,
  };
  deps.log.info("daily rollover ran", { scheduledTime: at.toISOString(), ...result });
  return result;
}

/** A Worker has no background job: whatever no search has indexed yet is indexed here, a batch at a time. */
async function indexAllPendingSearch(db: Db): Promise<number> {
  let indexedSearchEntries = 0;
  for (;;) {
    const indexed = await indexPendingSearch(db);
    indexedSearchEntries += indexed;
    if (indexed < INDEX_BATCH) return indexedSearchEntries;
  }
}

/** The sweep of files no row names; a store or database failure there is logged and the rest of the job's result stands (the next run sweeps again). */
async function sweepFiles(deps: RolloverDeps, at: Date): Promise<SweepResult> {
  try {
    return await sweepUnnamedFiles(deps, at);
  } catch (err) {
    deps.log.error("the sweep of attachments' files failed; the next daily run tries again", { err });
    return { examinedFiles: 0, removedUnnamedFiles: 0 };
  }
}
