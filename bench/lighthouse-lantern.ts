// What Lighthouse's simulation (Lantern) made of a run: each network request and main-thread
// task of the graphs behind first contentful paint, largest contentful paint and total
// blocking time, with when it was simulated to start and end (ms after the navigation) and
// what it was. Written beside a run's report when LIGHTHOUSE_REPORTS is set, to see which
// chain of requests a paint waited for and which tasks counted as blocking.
import * as Lantern from "lighthouse/core/lib/lantern/lantern.js";

interface Timing {
  startTime: number;
  endTime: number;
}

interface LanternNode {
  type: "cpu" | "network";
  startTime: number;
  endTime: number;
  childEvents?: Array<{ name: string; dur?: number; args?: { data?: { url?: string; functionName?: string } } }>;
  request?: { url: string; priority?: string; transferSize?: number };
}

const LABELS = ["optimisticFirstContentfulPaint", "pessimisticLargestContentfulPaint", "optimisticTotalBlockingTime"];

/** What a task did: its longest inner events (a script's file, a function's name), longest first. */
function describeTask(node: LanternNode): string {
  const inner = (node.childEvents ?? []).filter((e) => (e.dur ?? 0) > 300 && e.name !== "RunTask");
  inner.sort((a, b) => (b.dur ?? 0) - (a.dur ?? 0));
  return inner
    .slice(0, 5)
    .map((e) => {
      const url = e.args?.data?.url?.replace(/.*\//, "");
      const fn = e.args?.data?.functionName;
      return `${e.name}${url ? `(${url})` : ""}${fn ? `[${fn}]` : ""} ${((e.dur ?? 0) / 1000).toFixed(1)}`;
    })
    .join(", ");
}

/** The simulations of the last Lighthouse run, as text: one line a node, in simulated order. */
export function lanternSummary(): string {
  const all = (Lantern.Simulation.Simulator as unknown as { allNodeTimings: Map<string, Map<LanternNode, Timing>> }).allNodeTimings;
  const lines: string[] = [];
  for (const label of LABELS) {
    const timings = all.get(label);
    if (!timings) continue;
    lines.push(`== ${label}`);
    const rows = [...timings.entries()].sort((a, b) => a[1].startTime - b[1].startTime);
    const observedStart = Math.min(...rows.map(([node]) => node.startTime));
    for (const [node, t] of rows) {
      const observed = `observed ${((node.startTime - observedStart) / 1000).toFixed(0)}+${((node.endTime - node.startTime) / 1000).toFixed(1)}`;
      const what = node.type === "network" ? `${node.request?.url.replace(/^https?:\/\/[^/]+/, "")}` : `task: ${describeTask(node)}`;
      lines.push(`${t.startTime.toFixed(0).padStart(6)} ${t.endTime.toFixed(0).padStart(6)} ${(t.endTime - t.startTime).toFixed(0).padStart(5)}  ${node.type.padEnd(7)} ${observed.padEnd(20)} ${what}`);
    }
  }
  return lines.join("\n");
}
