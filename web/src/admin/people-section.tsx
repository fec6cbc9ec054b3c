import { useEffect, useState } from "preact/hooks";
import { Link, useLocation, useSearch } from "wouter-preact";
import { Avatar } from "../ui/avatar";
import { formatDateTime } from "../ui/time";
import { type PeopleFilters, type Person, type Plan, usePeople, usePlans } from "./queries";
import { ScrollTable } from "./scroll-table";

/** How each kind of sign-in method reads. */
export const METHOD_NAMES: Record<string, string> = { wallet: "Wallet", provider: "Provider", local: "Name" };

/** A plan's name by its id (the id itself for a plan PLANS no longer has). */
export function planName(plans: Plan[] | undefined, id: string): string {
  return plans?.find((p) => p.id === id)?.name ?? id;
}

/** The filters live in the address (`?q=&status=&plan=`): back from a person's page, the list is as it was. */
function useFilters(): [PeopleFilters, (next: PeopleFilters) => void] {
  const search = new URLSearchParams(useSearch());
  const [, navigate] = useLocation();
  const status = search.get("status");
  const filters: PeopleFilters = { q: search.get("q") ?? "", status: status === "active" || status === "suspended" ? status : "", plan: search.get("plan") ?? "" };
  const set = (next: PeopleFilters) => {
    const query = new URLSearchParams(Object.entries(next).filter(([, v]) => v !== "")).toString();
    navigate(`/admin/people${query ? `?${query}` : ""}`, { replace: true });
  };
  return [filters, set];
}

/** Everyone with an account: search, filters, and a page of 50 at a time. */
export function PeopleSection() {
  const [filters, setFilters] = useFilters();
  const [q, setQ] = useState(filters.q);
  useEffect(() => setQ(filters.q), [filters.q]);
  const people = usePeople(filters);
  const plans = usePlans();
  const rows = people.data?.pages.flatMap((p) => p.items) ?? [];
  // Who was just erased (the person's page came back here saying so): said once, not again on a reload.
  const [erased] = useState(() => (history.state as { erased?: string } | null)?.erased);
  useEffect(() => {
    if (erased) history.replaceState(null, "");
  }, [erased]);

  return (
    <div class="stack wide-stack">
      {erased && (
        <p class="notice" role="status">
          {erased}’s account is erased.
        </p>
      )}
      <form
        class="card admin-filters"
        aria-label="Find people"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...filters, q: q.trim() });
        }}
      >
        <label class="field grow">
          <span>Search</span>
          <input type="search" placeholder="Name, e-mail, account id or wallet" maxLength={200} value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>Status</span>
          <select value={filters.status} onChange={(e) => setFilters({ ...filters, status: e.currentTarget.value as PeopleFilters["status"] })}>
            <option value="">Any</option>
            <option value="active">Active</option>
            <option value="suspended">Suspended</option>
          </select>
        </label>
        <label class="field">
          <span>Plan</span>
          <select value={filters.plan} onChange={(e) => setFilters({ ...filters, plan: e.currentTarget.value })}>
            <option value="">Any</option>
            {plans.data?.items.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="button primary align-end">
          Search
        </button>
      </form>

      <section class="card" aria-labelledby="people-title">
        <h2 id="people-title">People</h2>
        {people.isError && (
          <p role="alert" class="error">
            {people.error.message}
          </p>
        )}
        {people.isPending && <p class="muted">Loading…</p>}
        {people.data && (
          <p class="muted" role="status">
            {rows.length === 0 ? "No one matches." : `${rows.length}${people.hasNextPage ? "+" : ""} ${rows.length === 1 ? "person" : "people"}, newest first.`}
          </p>
        )}
        {rows.length > 0 && <PeopleTable rows={rows} plans={plans.data?.items} />}
        {people.hasNextPage && (
          <button type="button" class="button" onClick={() => void people.fetchNextPage()} disabled={people.isFetchingNextPage}>
            Show more people
          </button>
        )}
      </section>
    </div>
  );
}

function PeopleTable({ rows, plans }: { rows: Person[]; plans: Plan[] | undefined }) {
  return (
    <ScrollTable label="People table">
      <table class="admin-table">
        <thead>
          <tr>
            <th scope="col">Person</th>
            <th scope="col">Signs in with</th>
            <th scope="col">Plan</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Credits today
            </th>
            <th scope="col" class="num">
              Granted
            </th>
            <th scope="col" class="num">
              Messages, 30 d
            </th>
            <th scope="col">Last seen</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((p) => (
            <tr key={p.id}>
              <th scope="row">
                {/* The account id is on the person's page (and a search finds it): here it made every row three lines. */}
                <div class="person-cell">
                  <Avatar url={p.avatarUrl} name={p.name} />
                  <Link href={`/admin/people/${p.id}`}>{p.name || "(no name)"}</Link>
                </div>
              </th>
              <td>{p.signInMethods.map((m) => METHOD_NAMES[m] ?? m).join(", ") || "none"}</td>
              <td>{planName(plans, p.plan)}</td>
              <td>
                <StatusBadge status={p.status} />
              </td>
              <td class="num">{p.creditsUsedToday}</td>
              <td class="num">{p.granted}</td>
              <td class="num">{p.messages30Days}</td>
              <td class="nowrap">{formatDateTime(p.lastSeenAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}

export function StatusBadge({ status }: { status: "active" | "suspended" }) {
  return <span class={`badge${status === "suspended" ? " suspended" : ""}`}>{status === "suspended" ? "Suspended" : "Active"}</span>;
}
