import { lt, sql } from "drizzle-orm";
import { bind, perDb, template, type Db, type Step } from "../../platform/db";
import type { SpeedLabel } from "../../platform/models/catalog";
import type { ModelRegistry } from "../../platform/models/registry";
import { modelTimings } from "../../../schema/index";

// ---------------------------------------------------------------------------------------
// Measured speed: each stored exchange records how long its model took to the first token
// and to the end, in the batch that stores it; GET /models shows each model's medians over
// its recent exchanges on this deployment. The database holds them, so every isolate and
// process agrees; a few seconds' cache in memory spares GET /models the read.
// ---------------------------------------------------------------------------------------

/** The recent exchanges a model's medians are taken over. */
export const SPEED_SAMPLES = 50;
/** Exchanges older than this are not "recent": the daily job prunes them. */
export const SPEED_WINDOW_DAYS = 7;
/** Below this many exchanges a model's speed is its configured label (or unknown). */
export const MIN_SPEED_SAMPLES = 3;
/** GET /models reads the medians again after this long. */
const CACHE_MS = 10_000;

/** One exchange's timing, as the batch that stores it records it. */
export interface ExchangeTiming {
  model: string;
  at: Date;
  /** null when the reply was asked for whole. */
  firstTokenMs: number | null;
  durationMs: number;
  outputTokens: number;
}

/** The timing's row, for the batch that stores the exchange: on every message, so its statement is built once per handle. */
export function timingStatement(db: Db, timing: ExchangeTiming): Step {
  return bind(timingTemplate(db), { ...timing });
}

const timingTemplate = perDb((db) =>
  template(
    db.insert(modelTimings).values({
      model: sql.placeholder("model"),
      at: sql.placeholder("at"),
      firstTokenMs: sql.placeholder("firstTokenMs"),
      durationMs: sql.placeholder("durationMs"),
      outputTokens: sql.placeholder("outputTokens"),
    }),
  ),
);

/** A model's measured speed: medians over its recent exchanges, null without data. */
export interface MeasuredSpeed {
  samples: number;
  /** Median time to the first token of a streamed reply, in ms. */
  timeToFirstTokenMs: number | null;
  /** Median output tokens per second after the first token (for a whole reply: over its whole time). */
  tokensPerSecond: number | null;
}

const NO_DATA: MeasuredSpeed = { samples: 0, timeToFirstTokenMs: null, tokensPerSecond: null };

/** The speed label measured speed earns: fast from 50 tokens a second, medium from 20. */
export function speedLabel(measured: MeasuredSpeed, configured: SpeedLabel | undefined): SpeedLabel | "unknown" {
  if (measured.samples < MIN_SPEED_SAMPLES || measured.tokensPerSecond === null) return configured ?? "unknown";
  return measured.tokensPerSecond >= 50 ? "fast" : measured.tokensPerSecond >= 20 ? "medium" : "slow";
}

const cache = new WeakMap<ModelRegistry, { at: number; speeds: Map<string, MeasuredSpeed> }>();

/**
 * Every model's measured speed (models without recent exchanges are absent). One read of
 * each model's newest SPEED_SAMPLES timings within the window, at most every few seconds
 * per process or isolate (`key` holds the cache: the registry lives as long).
 */
export async function measuredSpeeds(db: Db, key: ModelRegistry, now: Date): Promise<Map<string, MeasuredSpeed>> {
  const cached = cache.get(key);
  if (cached && now.getTime() - cached.at < CACHE_MS && now.getTime() >= cached.at) return cached.speeds;
  const since = new Date(now.getTime() - SPEED_WINDOW_DAYS * 86_400_000);
  // Each listed model's newest timings, found through its (model, at) index: a window
  // function over the table read every timing of the window, about a day's messages
  // between two runs of the daily job, every few seconds.
  const ids = JSON.stringify(key.list().map((m) => m.id));
  const newest = sql`select i.id from ${modelTimings} i where i.model = m.value and i.at >= ${since.getTime()} order by i.at desc limit ${SPEED_SAMPLES}`;
  const rows = await db
    .select({ model: modelTimings.model, firstTokenMs: modelTimings.firstTokenMs, durationMs: modelTimings.durationMs, outputTokens: modelTimings.outputTokens })
    .from(sql`json_each(${ids}) m`)
    .innerJoin(modelTimings, sql`${modelTimings.id} in (${newest})`);
  const byModel = new Map<string, typeof rows>();
  for (const row of rows) {
    const list = byModel.get(row.model) ?? [];
    list.push(row);
    byModel.set(row.model, list);
  }
  const speeds = new Map<string, MeasuredSpeed>();
  for (const [model, timings] of byModel) {
    const firstTokens = timings.flatMap((t) => (t.firstTokenMs === null ? [] : [t.firstTokenMs]));
    const rates = timings.flatMap((t) => {
      const generating = t.durationMs - (t.firstTokenMs ?? 0);
      return generating > 0 && t.outputTokens > 0 ? [(t.outputTokens * 1000) / generating] : [];
    });
    const ttft = median(firstTokens);
    const rate = median(rates);
    speeds.set(model, {
      samples: timings.length,
      timeToFirstTokenMs: ttft === null ? null : Math.round(ttft),
      tokensPerSecond: rate === null ? null : Math.round(rate * 10) / 10,
    });
  }
  cache.set(key, { at: now.getTime(), speeds });
  return speeds;
}

export function speedOf(speeds: Map<string, MeasuredSpeed>, model: string): MeasuredSpeed {
  return speeds.get(model) ?? NO_DATA;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * For the daily job: timings older than the window, and those past each model's newest
 * 4 × SPEED_SAMPLES (a busy model's table stays small between two runs).
 */
export function pruneTimingStatements(db: Db, at: Date) {
  const since = new Date(at.getTime() - SPEED_WINDOW_DAYS * 86_400_000);
  const ranked = db
    .select({
      id: modelTimings.id,
      rank: sql<number>`row_number() over (partition by ${modelTimings.model} order by ${modelTimings.at} desc)`.as("rank"),
    })
    .from(modelTimings)
    .as("ranked");
  const surplus = db.select({ id: ranked.id }).from(ranked).where(sql`${ranked.rank} > ${SPEED_SAMPLES * 4}`);
  return [
    db.delete(modelTimings).where(lt(modelTimings.at, since)).returning({ id: modelTimings.id }),
    db.delete(modelTimings).where(sql`${modelTimings.id} in ${surplus}`).returning({ id: modelTimings.id }),
  ] as const;
}
