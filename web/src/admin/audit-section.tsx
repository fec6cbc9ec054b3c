import { Link } from "wouter-preact";
import { formatDateTime } from "../ui/time";
import { planName } from "./people-section";
import { type AuditEvent, type Plan, useAudit, usePlans } from "./queries";
import { ScrollTable } from "./scroll-table";

const ACTIONS: Record<AuditEvent["action"], string> = {
  "user.suspend": "suspended",
  "user.unsuspend": "lifted the suspension of",
  "user.grant": "granted credits to",
  "user.plan": "changed the plan of",
  "user.erase": "erased",
  "invite.create": "created an invite",
  "invite.delete": "deleted an invite",
};

/** What an action took, in words: the reason, the amount and note, the plan (by its name), the invite's terms. */
export function describeDetails(event: AuditEvent, plans: Plan[] | undefined): string {
  const d = event.details as Record<string, string | number | null | undefined>;
  const parts: string[] = [];
  if (d.reason) parts.push(`reason: ${d.reason}`);
  if (d.amount !== undefined) parts.push(`${d.amount} credits`);
  if (d.uses !== undefined) parts.push(`${d.uses} ${d.uses === 1 ? "use" : "uses"}`);
  if (d.plan) parts.push(`plan: ${planName(plans, String(d.plan))}`);
  if (d.expiresAt) parts.push(`expires ${formatDateTime(String(d.expiresAt))}`);
  if (d.note) parts.push(`note: ${d.note}`);
  if (event.action === "invite.delete" && d.inviteId) parts.push(`invite ${d.inviteId}`);
  return parts.join("; ");
}

/** Every admin action, newest first, 50 at a time. */
export function AuditSection() {
  const audit = useAudit();
  const plans = usePlans();
  const events = audit.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section class="card" aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <p class="muted">Every admin action, recorded in the same transaction as its effect, newest first.</p>
      {audit.isError && (
        <p role="alert" class="error">
          {audit.error.message}
        </p>
      )}
      {audit.data && events.length === 0 && <p class="muted">No admin actions yet.</p>}
      {events.length > 0 && (
        <ScrollTable label="Audit log table">
          <table class="admin-table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Whom</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id}>
                  <td>{formatDateTime(e.at)}</td>
                  <td>
                    <PersonLink id={e.actorId} name={e.actorName} />
                  </td>
                  <td>{ACTIONS[e.action] ?? e.action}</td>
                  <td>{e.action.startsWith("user.") && e.targetId ? <PersonLink id={e.targetId} name={e.targetName} /> : <span class="muted">–</span>}</td>
                  <td class="details">{describeDetails(e, plans.data?.items)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      {audit.hasNextPage && (
        <button type="button" class="button" onClick={() => void audit.fetchNextPage()} disabled={audit.isFetchingNextPage}>
          Show older actions
        </button>
      )}
    </section>
  );
}

/** An account by its name, linked to its page; an erased one by its id alone. */
function PersonLink({ id, name }: { id: string; name: string | null }) {
  if (name === null) {
    return (
      <span class="muted">
        erased account <span class="mono small">{id}</span>
      </span>
    );
  }
  return <Link href={`/admin/people/${id}`}>{name || id}</Link>;
}
