// Lighthouse's figures as they would be had every task of the page had a core to itself: a
// run's trace, each main-thread task shortened to the CPU time it got (the trace's `tdur`),
// audited again from the run's saved artifacts. Lighthouse's simulation takes a task's wall
// time (times 4, for a phone's CPU), which on a shared machine is mostly the other processes'
// work: the same page scored 61 and 97 a minute apart at load 8. This figure moves with the
// page's own work.
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string };
}

/** The page's renderer main thread: the one its first contentful paint was recorded on. */
export function pageMainThread(events: TraceEvent[]): { pid: number; tid: number } | undefined {
  const fcp = events.find((e) => e.name === "firstContentfulPaint");
  if (!fcp) return undefined;
  const main = events.find((e) => e.name === "thread_name" && e.pid === fcp.pid && e.args?.name === "CrRendererMain");
  return main && { pid: main.pid, tid: main.tid };
}

const TASK = new Set(["RunTask", "ThreadControllerImpl::RunTask", "ThreadControllerImpl::DoWork", "TaskQueueManager::ProcessTaskFromWorkQueue"]);

/**
 * The trace with each top-level task of the page's main thread lasting its CPU time, the
 * events inside it squeezed in proportion (so that they stay inside it and in order); tasks
 * keep their start times.
 */
export function cpuTimeTrace(events: TraceEvent[]): TraceEvent[] {
  const main = pageMainThread(events);
  if (!main) return events;
  const onMain = events.filter((e) => e.pid === main.pid && e.tid === main.tid).sort((a, b) => a.ts - b.ts);
  const scaled = new Map<TraceEvent, TraceEvent>();
  for (let i = 0; i < onMain.length; i++) {
    const task = onMain[i]!;
    if (scaled.has(task) || !TASK.has(task.name) || task.ph !== "X" || !task.dur || task.tdur === undefined) continue;
    const end = task.ts + task.dur;
    const factor = Math.min(1, task.tdur / task.dur);
    scaled.set(task, { ...task, dur: task.dur * factor });
    for (let j = i + 1; j < onMain.length && onMain[j]!.ts < end; j++) {
      const inner = onMain[j]!;
      scaled.set(inner, { ...inner, ts: task.ts + (inner.ts - task.ts) * factor, ...(inner.dur !== undefined ? { dur: inner.dur * factor } : {}) });
    }
  }
  return events.map((e) => scaled.get(e) ?? e);
}

/** A copy of the artifacts Lighthouse saved in `from` (its gatherMode) in `to`, with the trace as cpuTimeTrace makes it. */
export function cpuTimeArtifacts(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
  const file = join(to, "defaultPass.trace.json");
  const trace = JSON.parse(readFileSync(file, "utf8")) as { traceEvents: TraceEvent[] };
  writeFileSync(file, JSON.stringify({ ...trace, traceEvents: cpuTimeTrace(trace.traceEvents) }));
}
