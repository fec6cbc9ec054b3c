import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import { downloadFile } from "../api/download";
import { BarChart } from "../ui/bar-chart";
import { formatDay } from "../ui/time";
import { HorizontalChart } from "./model-chart";
import { type UsageRow, useUsage } from "./queries";
import { ScrollTable } from "./scroll-table";

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);

/** An amount of the prices' currency: cents of large sums, more digits of small ones. */
export function formatCost(cost: number | null): string {
  if (cost === null) return "no price";
  return cost.toLocaleString("en-US", { maximumFractionDigits: cost !== 0 && cost < 0.01 ? 6 : cost < 1 ? 4 : 2 });
}

/** What a range of days may be, as the server takes it: both ends real days, in order, at most 400 days. */
function rangeProblem(from: string, to: string): string | null {
  const a = dayMs(from);
  const b = dayMs(to);
  if (Number.isNaN(a) || Number.isNaN(b)) return "Choose both days.";
  if (a > b) return "The first day must not be after the last.";
  if (b - a >= 400 * DAY_MS) return "Choose at most 400 days.";
  return null;
}

/** Messages, credits and the operator's cost over a range of days: per day, per model, the top users, and a CSV. */
export function UsageSection() {
  const today = isoDay(Date.now());
  const [from, setFrom] = useState(isoDay(dayMs(today) - 29 * DAY_MS));
  const [to, setTo] = useState(today);
  const problem = rangeProblem(from, to);
  return (
    <div class="stack wide-stack">
      <form class="card admin-filters" aria-label="Range of days" onSubmit={(e) => e.preventDefault()}>
        <label class="field">
          <span>From (UTC)</span>
          <input type="date" value={from} max={to} onChange={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>To (UTC)</span>
          <input type="date" value={to} min={from} onChange={(e) => setTo(e.currentTarget.value)} />
        </label>
        <CsvDownload from={from} to={to} disabled={problem !== null} />
      </form>
      {problem ? (
        <p role="alert" class="error">
          {problem}
        </p>
      ) : (
        <Report from={from} to={to} today={today} />
      )}
    </div>
  );
}

function CsvDownload({ from, to, disabled }: { from: string; to: string; disabled: boolean }) {
  const [groupBy, setGroupBy] = useState<"day" | "model" | "user">("day");
  const [error, setError] = useState<string | null>(null);
  const download = () => {
    setError(null);
    const query = new URLSearchParams({ from, to, groupBy, format: "csv" });
    downloadFile(`/admin/usage?${query}`, `usage-${from}-${to}-${groupBy}.csv`).catch((err: Error) => setError(err.message));
  };
  return (
    <div class="csv-download">
      <label class="field">
        <span>CSV rows per</span>
        <select value={groupBy} onChange={(e) => setGroupBy(e.currentTarget.value as typeof groupBy)}>
          <option value="day">day</option>
          <option value="model">model</option>
          <option value="user">person</option>
        </select>
      </label>
      <button type="button" class="button align-end" onClick={download} disabled={disabled}>
        Download CSV
      </button>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </div>
  );
}

function Report({ from, to, today }: { from: string; to: string; today: string }) {
  const byDay = useUsage(from, to, "day");
  const byModel = useUsage(from, to, "model");
  const byUser = useUsage(from, to, "user");
  const failure = byDay.error ?? byModel.error ?? byUser.error;
  if (failure) {
    return (
      <p role="alert" class="error">
        {failure.message}
      </p>
    );
  }
  if (!byDay.data || !byModel.data || !byUser.data) return <p class="muted">Loading…</p>;
  const days = everyDay(from, to, byDay.data.items);
  const priced = byDay.data.items.some((r) => r.cost !== null);
  return (
    <>
      <Totals rows={byDay.data.items} />
      <section class="card stack" aria-labelledby="per-day">
        <h2 id="per-day">Per day</h2>
        <DayChart days={days} today={today} metric="credits" />
        {priced ? <DayChart days={days} today={today} metric="cost" /> : <NoPrices />}
      </section>
      <section class="card stack" aria-labelledby="per-model">
        <h2 id="per-model">Per model</h2>
        <ModelCharts rows={byModel.data.items} priced={priced} />
      </section>
      <TopUsers rows={byUser.data.items} />
    </>
  );
}

/** Every day of the range, oldest first, a day without use as zeros (the report lists only days with rows). */
function everyDay(from: string, to: string, rows: UsageRow[]): Array<{ day: string; credits: number; cost: number }> {
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const days = [];
  for (let t = dayMs(from); t <= dayMs(to); t += DAY_MS) {
    const row = byKey.get(isoDay(t));
    days.push({ day: isoDay(t), credits: row?.credits ?? 0, cost: row?.cost ?? 0 });
  }
  return days;
}

function Totals({ rows }: { rows: UsageRow[] }) {
  const sum = (pick: (r: UsageRow) => number | null) => rows.reduce((total, r) => total + (pick(r) ?? 0), 0);
  const priced = rows.some((r) => r.cost !== null);
  return (
    <div class="stat-row card">
      <div class="stat">
        <span class="stat-value">{sum((r) => r.messages)}</span>
        <span class="stat-label">messages</span>
      </div>
      <div class="stat">
        <span class="stat-value">{sum((r) => r.credits)}</span>
        <span class="stat-label">credits</span>
      </div>
      <div class="stat">
        <span class="stat-value">{priced ? formatCost(sum((r) => r.cost)) : "–"}</span>
        <span class="stat-label">cost</span>
      </div>
      <div class="stat">
        <span class="stat-value">{sum((r) => r.failed)}</span>
        <span class="stat-label">failed (refunded)</span>
      </div>
    </div>
  );
}

function NoPrices() {
  return (
    <p class="muted">
      No cost to show: no model of the catalog has prices. Give <code>MODELS</code> entries <code>inputPricePerMillion</code> and{" "}
      <code>outputPricePerMillion</code>.
    </p>
  );
}

/** Credits or cost per day: a date under about five of the days, the last one always. */
function DayChart({ days, today, metric }: { days: Array<{ day: string; credits: number; cost: number }>; today: string; metric: "credits" | "cost" }) {
  const every = Math.max(1, Math.ceil(days.length / 5));
  const bars = days.map((d, i) => {
    const last = i === days.length - 1;
    const value = d[metric];
    return {
      key: d.day,
      value,
      label: (days.length - 1 - i) % every === 0 ? (last && d.day === today ? "today" : formatDay(d.day)) : "",
      name: `${d.day}: ${metric === "credits" ? `${value} credits` : `cost ${formatCost(value)}`}`,
    };
  });
  const label = metric === "credits" ? "Credits per day" : "Cost per day";
  return (
    <div>
      <h3 class="chart-title">{label}</h3>
      <BarChart bars={bars} unit={metric} listLabel={label} whole={metric === "credits"} caption={`${label}, from ${days[0]?.day} to ${days.at(-1)?.day}.`} />
    </div>
  );
}

function ModelCharts({ rows, priced }: { rows: UsageRow[]; priced: boolean }) {
  if (rows.length === 0) return <p class="muted">No messages in this range.</p>;
  const sorted = [...rows].sort((a, b) => b.credits - a.credits);
  const credits = sorted.map((r) => ({ key: r.key ?? "?", value: r.credits, text: `${r.credits} credits` }));
  const cost = sorted.map((r) => ({ key: r.key ?? "?", value: r.cost ?? 0, text: formatCost(r.cost) }));
  return (
    <>
      <h3 class="chart-title">Credits per model</h3>
      <HorizontalChart rows={credits} unit="credits" listLabel="Credits per model" caption="Credits charged per model over the range." />
      {priced && (
        <>
          <h3 class="chart-title">Cost per model</h3>
          <HorizontalChart rows={cost} unit="cost" whole={false} listLabel="Cost per model" caption="The operator's cost per model over the range, from the catalog's prices." />
        </>
      )}
      <ModelTable rows={sorted} />
    </>
  );
}

function ModelTable({ rows }: { rows: UsageRow[] }) {
  return (
    <ScrollTable label="Usage per model table">
      <table class="admin-table">
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col" class="num">Messages</th>
            <th scope="col" class="num">Credits</th>
            <th scope="col" class="num">Tokens in</th>
            <th scope="col" class="num">Tokens out</th>
            <th scope="col" class="num">Failed</th>
            <th scope="col" class="num">First token (median)</th>
            <th scope="col" class="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <th scope="row">{r.key}</th>
              <td class="num">{r.messages}</td>
              <td class="num">{r.credits}</td>
              <td class="num">{r.inputTokens}</td>
              <td class="num">{r.outputTokens}</td>
              <td class="num">{r.failed}</td>
              <td class="num">{r.medianTimeToFirstTokenMs === null ? "–" : `${(r.medianTimeToFirstTokenMs / 1000).toFixed(2)} s`}</td>
              <td class="num">{formatCost(r.cost)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}

/** The ten people who used the most credits in the range. */
function TopUsers({ rows }: { rows: UsageRow[] }) {
  const top = [...rows].sort((a, b) => b.credits - a.credits).slice(0, 10);
  return (
    <section class="card" aria-labelledby="top-users">
      <h2 id="top-users">Top users</h2>
      {top.length === 0 ? (
        <p class="muted">No one used credits in this range.</p>
      ) : (
        <ScrollTable label="Top users table">
          <table class="admin-table">
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col" class="num">Messages</th>
                <th scope="col" class="num">Credits</th>
                <th scope="col" class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {top.map((r) => (
                <tr key={r.key ?? "erased"}>
                  <th scope="row">{r.key ? <Link href={`/admin/people/${r.key}`}>{r.name || r.key}</Link> : <span class="muted">erased accounts</span>}</th>
                  <td class="num">{r.messages}</td>
                  <td class="num">{r.credits}</td>
                  <td class="num">{formatCost(r.cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
    </section>
  );
}
