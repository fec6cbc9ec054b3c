import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "wouter-preact";
import { api, must } from "../api/client";
import { useCredits } from "../chat/credits";
import { BarChart } from "../ui/bar-chart";
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

/**
 * Credits per day, oldest to today: a date under every seventh day, today's included, and
 * each day's count in its bar's name and tooltip.
 */
function DailyChart({ days }: { days: Array<{ day: string; used: number }> }) {
  const labelled = (i: number) => (days.length - 1 - i) % 7 === 0;
  const bars = days.map((d, i) => ({
    key: d.day,
    value: d.used,
    label: labelled(i) ? (i === days.length - 1 ? "today" : formatDay(d.day)) : "",
    name: `${d.day}: ${d.used} credits`,
  }));
  return <BarChart bars={bars} unit="credits" listLabel="Credits used per day" caption={`Credits used on each of the last ${days.length} days, today last.`} />;
}
