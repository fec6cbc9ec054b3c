import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import { useClientConfig } from "../api/client-config";
import { ConfirmDialog } from "../ui/dialog";
import { formatDateTime } from "../ui/time";
import { planName } from "./people-section";
import { type CreatedInvite, type Invite, type Plan, useCreateInvite, useDeleteInvite, useInvites, usePlans } from "./queries";
import { ScrollTable } from "./scroll-table";

/** Invite codes for SIGN_UP=invite: make one (its code shown once), see who used each, delete one. */
export function InvitesSection() {
  const config = useClientConfig();
  const plans = usePlans();
  const invites = useInvites();
  const [created, setCreated] = useState<CreatedInvite | null>(null);
  const policy = config.data?.signUp.policy;
  return (
    <div class="stack wide-stack">
      {policy && policy !== "invite" && (
        <p class="notice">
          Sign-up here is {policy === "open" ? "open: anyone may make an account without a code" : "closed: no new accounts are made, with a code or without"}. Invites
          count where the service runs with <code>SIGN_UP=invite</code>.
        </p>
      )}
      <NewInvite plans={plans.data?.items} onCreated={setCreated} />
      {created && <CreatedCode invite={created} onDone={() => setCreated(null)} />}
      <section class="card" aria-labelledby="invite-list">
        <h2 id="invite-list">Invites</h2>
        {invites.isError && (
          <p role="alert" class="error">
            {invites.error.message}
          </p>
        )}
        {invites.data && invites.data.items.length === 0 && <p class="muted">No invites yet.</p>}
        {invites.data && invites.data.items.length > 0 && <InviteTable invites={invites.data.items} plans={plans.data?.items} />}
      </section>
    </div>
  );
}

function NewInvite({ plans, onCreated }: { plans: Plan[] | undefined; onCreated: (invite: CreatedInvite) => void }) {
  const create = useCreateInvite();
  const [uses, setUses] = useState("1");
  const [expires, setExpires] = useState("");
  const [plan, setPlan] = useState("");
  const [note, setNote] = useState("");
  const count = Number(uses);
  const valid = Number.isInteger(count) && count >= 1 && count <= 100_000;
  return (
    <form
      class="card stack"
      aria-labelledby="new-invite"
      onSubmit={(e) => {
        e.preventDefault();
        const body = {
          uses: count,
          // The code works through the whole of its last day (UTC).
          ...(expires ? { expiresAt: `${expires}T23:59:59.999Z` } : {}),
          ...(plan ? { plan } : {}),
          ...(note.trim() ? { note: note.trim() } : {}),
        };
        create.mutate(body, {
          onSuccess: (invite) => {
            onCreated(invite);
            setNote("");
          },
        });
      }}
    >
      <h2 id="new-invite">Create an invite</h2>
      <div class="admin-fields">
        <label class="field">
          <span>Uses</span>
          <input type="number" inputMode="numeric" required min={1} max={100_000} step={1} value={uses} onInput={(e) => setUses(e.currentTarget.value)} />
        </label>
        <label class="field">
          <span>Last day (optional)</span>
          <input type="date" value={expires} onChange={(e) => setExpires(e.currentTarget.value)} aria-describedby="invite-expiry-hint" />
        </label>
        <label class="field">
          <span>Plan</span>
          <select value={plan} onChange={(e) => setPlan(e.currentTarget.value)}>
            <option value="">{plans?.find((p) => p.default)?.name ?? "Default"} (the default)</option>
            {plans
              ?.filter((p) => !p.default)
              .map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
          </select>
        </label>
        <label class="field grow">
          <span>Note (what it is for)</span>
          <input maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </label>
      </div>
      <p id="invite-expiry-hint" class="muted small">
        A code works until the end of its last day (UTC); without one, until its uses run out or it is deleted.
      </p>
      <div>
        <button type="submit" class="button primary" disabled={create.isPending || !valid}>
          Create invite
        </button>
      </div>
      {create.isError && (
        <p role="alert" class="error">
          {create.error.message}
        </p>
      )}
    </form>
  );
}

/** The new code, this once: the service keeps only its hash. */
function CreatedCode({ invite, onDone }: { invite: CreatedInvite; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <section class="card stack highlight" aria-labelledby="created-invite">
      <h2 id="created-invite">Your new invite{invite.note ? ` “${invite.note}”` : ""}</h2>
      <p class="warning" role="alert">
        Copy the code now: it won't be shown again.
      </p>
      <div class="copy-row">
        <input class="mono" readOnly aria-label="New invite code" value={invite.code} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" class="button" onClick={() => void navigator.clipboard?.writeText(invite.code).then(() => setCopied(true))}>
          {copied ? "Copied" : "Copy code"}
        </button>
      </div>
      <p class="muted small">A new account gives it on the login screen, in “Invite code”.</p>
      <div>
        <button type="button" class="button" onClick={onDone}>
          I have saved it
        </button>
      </div>
    </section>
  );
}

function InviteTable({ invites, plans }: { invites: Invite[]; plans: Plan[] | undefined }) {
  const remove = useDeleteInvite();
  const [deleting, setDeleting] = useState<Invite | null>(null);
  const label = (i: Invite) => i.note || `made ${formatDateTime(i.createdAt)}`;
  const expired = (i: Invite) => i.expiresAt !== null && Date.parse(i.expiresAt) <= Date.now();
  return (
    <>
      {remove.isError && (
        <p role="alert" class="error">
          {remove.error.message}
        </p>
      )}
      <ScrollTable label="Invites table">
        <table class="admin-table">
          <thead>
            <tr>
              <th scope="col">Invite</th>
              <th scope="col" class="num">
                Uses left
              </th>
              <th scope="col">Expires</th>
              <th scope="col">Plan</th>
              <th scope="col">Used by</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {invites.map((i) => (
              <tr key={i.id}>
                <th scope="row">
                  {i.note ?? <span class="muted">no note</span>}
                  <span class="block muted small">made {formatDateTime(i.createdAt)}</span>
                </th>
                <td class="num">{i.usesLeft}</td>
                <td>{i.expiresAt ? `${expired(i) ? "expired " : ""}${formatDateTime(i.expiresAt)}` : "never"}</td>
                <td>{planName(plans, i.plan ?? plans?.find((p) => p.default)?.id ?? "default")}</td>
                <td>
                  {i.usedBy.length === 0
                    ? "no one yet"
                    : i.usedBy.map((u, n) => (
                        <span key={u.id}>
                          {n > 0 && ", "}
                          <Link href={`/admin/people/${u.id}`}>{u.name || u.id}</Link>
                        </span>
                      ))}
                </td>
                <td>
                  <button type="button" class="button small danger" aria-label={`Delete invite ${label(i)}`} onClick={() => setDeleting(i)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollTable>
      <ConfirmDialog
        title="Delete this invite?"
        open={!!deleting}
        confirmLabel="Delete invite"
        onClose={() => setDeleting(null)}
        onConfirm={() => {
          remove.mutate(deleting!.id);
          setDeleting(null);
        }}
      >
        Its code stops working at once; the accounts already made with it stay.
      </ConfirmDialog>
    </>
  );
}
