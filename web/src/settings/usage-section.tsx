import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "wouter-preact";
import { api, must } from "../api/client";
import { useCredits } from "../chat/credits";
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
  const max = Math.max(1, ...days.map((d) => d.used));
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
            <div class="meter" role="meter" aria-label="Credits used today" aria-valuemin={0} aria-valuemax={credits.data.allowance} aria-valuenow={credits.data.used}>
              <span style={{ width: `${(100 * credits.data.used) / Math.max(1, credits.data.allowance)}%` }} />
            </div>
          </div>
        )}
      </section>

      <section class="card" aria-labelledby="daily">
        <h2 id="daily">Last 30 days</h2>
        <p class="muted">{total} credits in total.</p>
        <figure class="chart" aria-labelledby="daily">
          <svg viewBox={`0 0 ${days.length * 20} 120`} preserveAspectRatio="none" role="list" aria-label="Credits used per day">
            {days.map((d, i) => {
              const h = (d.used / max) * 110;
              return (
                <g key={d.day} role="listitem" aria-label={`${d.day}: ${d.used} credits`}>
                  <title>{`${formatDay(d.day)}: ${d.used} credits`}</title>
                  <rect class="bar-bg" x={i * 20 + 3} y={0} width={14} height={120} />
                  <rect class="bar" x={i * 20 + 3} y={120 - Math.max(h, d.used ? 2 : 0)} width={14} height={Math.max(h, d.used ? 2 : 0)} rx={2} />
                </g>
              );
            })}
          </svg>
          {days.length > 0 && (
            <figcaption class="chart-axis">
              <span>{formatDay(days[0]!.day)}</span>
              <span>{formatDay(days[days.length - 1]!.day)}</span>
            </figcaption>
          )}
        </figure>
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
                    <td>{r.contextId ? <Link href={`/c/${r.contextId}`}>Open</Link> : <span class="muted">deleted</span>}</td>
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
