import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "wouter-preact";
import { api, must } from "../api/client";
import { useCredits } from "../chat/credits";
import { plainText } from "../ui/plain-text";
import { formatDateTime, formatDay } from "../ui/time";

/** Today's credits, daily use over 30 days (a bar chart), and the per-message history. */
export function UsageSection() {
  const credits = useCredits();
  const usage = useQuery({ queryKey: ["usage"], queryFn: () => must(api.GET("/usage", { params: { query: { days: 30 } } })) });
  const history = useInfiniteQuery({
    queryKey: ["usage", "messages"],
    queryFn: ({ pageParam }) =>
      must(api.GET("/usage/messages", { params: { query: { limit: 25, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor ?? null,
  });
  const days = [...(usage.data?.days ?? [])].reverse();
  const total = days.reduce((sum, d) => sum + d.used, 0);
  const rows = history.data?.pages.flatMap((p) => p.items) ?? [];

  return (
    <div class="stack wide-stack">
      <section class="card" aria-labelledby="today">
        <h2 id="today">Today</h2>
        {credits.data && (
          <div class="stat-row">
            <div class="stat">
              <span class="stat-value">{credits.data.used}</span>
              <span class="stat-label">used</span>
            </div>
            <div class="stat">
              <span class="stat-value">{credits.data.remaining}</span>
              <span class="stat-label">left of {credits.data.allowance}</span>
            </div>
            {/* biome-ignore lint/a11y/useSemanticElements: a styled bar; <meter> cannot be styled alike across browsers */}
            <div class="meter" role="meter" aria-label="Credits used today" aria-valuemin={0} aria-valuemax={credits.data.allowance} aria-valuenow={credits.data.used}>
              <span style={{ width: `${(100 * credits.data.used) / Math.max(1, credits.data.allowance)}%` }} />
            </div>
          </div>
        )}
      </section>

      <section class="card" aria-labelledby="daily">
        <h2 id="daily">Last 30 days</h2>
        <p class="muted">{total} credits in total.</p>
        {days.length > 0 && <DailyChart days={days} />}
      </section>

      <section class="card" aria-labelledby="history">
        <h2 id="history">Messages</h2>
        {history.data && rows.length === 0 && <p class="muted">No messages yet.</p>}
        {rows.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Model</th>
                  <th scope="col">Credits</th>
                  <th scope="col">Conversation</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r, i) => (
                  <tr key={`${r.at}-${i}`}>
                    <td>{formatDateTime(r.at)}</td>
                    <td>{r.model}</td>
                    <td>{r.credits}</td>
                    <td>
                      {r.contextId && r.contextName !== null ? (
                        <Link href={`/c/${r.contextId}`}>{plainText(r.contextName) || r.contextName}</Link>
                      ) : (
                        <span class="muted">{r.contextId ? "deleted" : "none (API)"}</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {history.hasNextPage && (
          <button type="button" class="button" onClick={() => void history.fetchNextPage()} disabled={history.isFetchingNextPage}>
            Show older messages
          </button>
        )}
      </section>
    </div>
  );
}

/** 0 and three or four round steps up to at least `max`: 0, 25, 50, 75, 100. */
export function axisTicks(max: number): number[] {
  const rough = Math.max(1, max) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(1, [1, 2, 2.5, 5, 10].map((f) => f * power).find((s) => s >= rough) ?? 10 * power);
  const top = Math.max(step, Math.ceil(max / step) * step);
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
}

/**
 * Credits per day, oldest to today: a value axis in credits with its grid lines, a bar per
 * day (its exact count in its name and tooltip) and a date under every seventh day, today's
 * included. Laid out in HTML, so the text keeps its size at any width.
 */
function DailyChart({ days }: { days: Array<{ day: string; used: number }> }) {
  const ticks = axisTicks(Math.max(...days.map((d) => d.used)));
  const top = ticks[ticks.length - 1]!;
  const at = (value: number) => `${(100 * value) / top}%`;
  const labelled = (i: number) => (days.length - 1 - i) % 7 === 0;
  const columns = { gridTemplateColumns: `repeat(${days.length}, minmax(0, 1fr))` };
  return (
    <figure class="chart">
      <div class="chart-area">
        <span class="chart-unit" aria-hidden="true">
          credits
        </span>
        <div class="chart-y" aria-hidden="true">
          {ticks.map((t) => (
            <span key={t} style={{ bottom: at(t) }}>
              {t}
            </span>
          ))}
        </div>
        <div class="chart-plot">
          {ticks.map((t) => (
            <span key={t} class="chart-grid" style={{ bottom: at(t) }} aria-hidden="true" />
          ))}
          {/* biome-ignore lint/a11y/useSemanticElements: the chart's bars, laid out as a grid, read as a list of days */}
          <div class="chart-bars" role="list" aria-label="Credits used per day" style={columns}>
            {days.map((d) => (
              // biome-ignore lint/a11y/useSemanticElements: one day's bar of the chart above
              <div key={d.day} class="chart-day" role="listitem" aria-label={`${d.day}: ${d.used} credits`} title={`${formatDay(d.day)}: ${d.used} credits`}>
                <span class="bar" style={{ height: d.used ? `max(2px, ${at(d.used)})` : "0" }} />
              </div>
            ))}
          </div>
        </div>
        <div class="chart-x" aria-hidden="true" style={columns}>
          {days.map((d, i) => (
            <span key={d.day} class={i === days.length - 1 ? "last" : ""}>
              {labelled(i) ? (i === days.length - 1 ? "today" : formatDay(d.day)) : ""}
            </span>
          ))}
        </div>
      </div>
      <figcaption class="visually-hidden">Credits used on each of the last {days.length} days, today last.</figcaption>
    </figure>
  );
}
