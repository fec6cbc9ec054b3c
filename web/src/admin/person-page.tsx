import { Link } from "wouter-preact";
import { ApiError } from "../api/client";
import { Avatar } from "../ui/avatar";
import { BarChart } from "../ui/bar-chart";
import { formatDateTime, formatDay } from "../ui/time";
import { EraseCard, GrantCard, PlanCard, StatusCard } from "./person-actions";
import { METHOD_NAMES, StatusBadge, planName } from "./people-section";
import { type PersonDetail, usePerson, usePlans } from "./queries";
import { ScrollTable } from "./scroll-table";

/** One account: who, what they use, their keys and devices, and what an admin can do to it. */
export function PersonPage({ id }: { id: string }) {
  const person = usePerson(id);
  const plans = usePlans();
  if (person.isError) {
    const missing = person.error instanceof ApiError && person.error.status === 404;
    return (
      <div class="stack">
        <BackLink />
        <p role="alert" class="error">
          {missing ? "No account has this id: it may have been erased." : person.error.message}
        </p>
      </div>
    );
  }
  if (!person.data) return <p class="muted">Loading…</p>;
  const p = person.data;
  const plan = plans.data?.items.find((x) => x.id === p.plan);
  return (
    <div class="stack wide-stack">
      <BackLink />
      <section class="card person-head" aria-labelledby="person-name">
        <Avatar url={p.avatarUrl} name={p.name} large />
        <div class="person-text">
          <h2 id="person-name">{p.name || "(no name)"}</h2>
          <span class="mono muted small">{p.id}</span>
          <span class="person-badges">
            <StatusBadge status={p.status} />
            <span class="badge">{planName(plans.data?.items, p.plan)} plan</span>
          </span>
          <span class="muted small">
            Signs in with {p.signInMethods.map((m) => METHOD_NAMES[m] ?? m).join(", ") || "nothing (no method left)"} · joined {formatDateTime(p.createdAt)} · last seen{" "}
            {formatDateTime(p.lastSeenAt)}
          </span>
        </div>
      </section>

      <div class="stat-row card">
        <Stat value={p.creditsUsedToday} label={plan ? `credits today, of ${plan.dailyCredits}` : "credits today"} />
        <Stat value={p.granted} label="granted credits left" />
        <Stat value={p.messages30Days} label="messages in 30 days" />
      </div>

      <div class="admin-actions">
        <StatusCard person={p} />
        <GrantCard person={p} />
        <PlanCard person={p} plans={plans.data?.items} />
      </div>

      <section class="card" aria-labelledby="person-credits">
        <h2 id="person-credits">Credits per day</h2>
        <CreditsChart days={[...p.creditsPerDay].reverse()} />
      </section>

      <KeysCard keys={p.apiKeys} />
      <SessionsCard sessions={p.sessions} />
      <EraseCard person={p} />
    </div>
  );
}

function BackLink() {
  return (
    <Link href="/admin/people" class="back-link">
      ← All people
    </Link>
  );
}

function Stat({ value, label }: { value: number; label: string }) {
  return (
    <div class="stat">
      <span class="stat-value">{value}</span>
      <span class="stat-label">{label}</span>
    </div>
  );
}

function CreditsChart({ days }: { days: PersonDetail["creditsPerDay"] }) {
  const labelled = (i: number) => (days.length - 1 - i) % 7 === 0;
  const bars = days.map((d, i) => ({
    key: d.day,
    value: d.used,
    label: labelled(i) ? (i === days.length - 1 ? "today" : formatDay(d.day)) : "",
    name: `${d.day}: ${d.used} credits`,
  }));
  return <BarChart bars={bars} unit="credits" listLabel="Credits used per day" caption={`Credits of the daily allowance used on each of the last ${days.length} days, today last.`} />;
}

function KeysCard({ keys }: { keys: PersonDetail["apiKeys"] }) {
  return (
    <section class="card" aria-labelledby="person-keys">
      <h2 id="person-keys">API keys</h2>
      {keys.length === 0 ? (
        <p class="muted">No API keys.</p>
      ) : (
        <ScrollTable label="API keys table">
          <table class="admin-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Daily limit</th>
                <th scope="col">Expires</th>
                <th scope="col">Models</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td class="mono">{k.prefix}…</td>
                  <td>{formatDateTime(k.createdAt)}</td>
                  <td>{formatDateTime(k.lastUsedAt)}</td>
                  <td>{k.dailyCreditLimit === null ? "none" : `${k.dailyCreditLimit} credits`}</td>
                  <td>{k.expiresAt ? formatDateTime(k.expiresAt) : "never"}</td>
                  <td>{k.models ? k.models.join(", ") : "any"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
    </section>
  );
}

function SessionsCard({ sessions }: { sessions: PersonDetail["sessions"] }) {
  return (
    <section class="card" aria-labelledby="person-sessions">
      <h2 id="person-sessions">Signed-in devices</h2>
      {sessions.length === 0 ? (
        <p class="muted">No live sessions.</p>
      ) : (
        <ScrollTable label="Signed-in devices table">
          <table class="admin-table">
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">Signed in with</th>
                <th scope="col">Since</th>
                <th scope="col">Last used</th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id}>
                  <td>{s.device}</td>
                  <td>{METHOD_NAMES[s.method] ?? s.method}</td>
                  <td>{formatDateTime(s.createdAt)}</td>
                  <td>{formatDateTime(s.lastUsedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
    </section>
  );
}
