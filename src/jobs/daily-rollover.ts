import type { Db } from "../db";
import type { Logger } from "../log";

export interface RolloverDeps {
  db: Db;
  log: Logger;
  now: () => Date;
}

/**
 * The daily job (Workers cron `0 0 * * *`, the Node server's midnight timer). Credits need
 * no reset: a new UTC day simply has no usage row yet. The job only tidies up, so running
 * it twice, late, or after missed days changes nothing that is already right.
 */
export async function runDailyRollover(deps: RolloverDeps): Promise<{ ranAt: string }> {
  const ranAt = deps.now().toISOString();
  deps.log.info("daily rollover ran", { ranAt });
  return { ranAt };
}
