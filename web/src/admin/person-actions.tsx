import { useEffect, useState } from "preact/hooks";
import { useLocation } from "wouter-preact";
import { Dialog } from "../ui/dialog";
import { type Plan, type PersonDetail, useErase, useGrant, useSetPlan, useSuspend, useUnsuspend } from "./queries";

// What an admin does to an account, from its page: each card says what it did (a status a
// screen reader announces) or why it failed, in the server's words.

/** What the last action said: done (a status) or failed (an alert). */
function Outcome({ done, error }: { done: string | null; error: Error | null }) {
  if (error) {
    return (
      <p role="alert" class="error">
        {error.message}
      </p>
    );
  }
  return (
    <p role="status" class="muted">
      {done ?? ""}
    </p>
  );
}

/** Suspend with a reason (the person is told it), or lift a suspension. */
export function StatusCard({ person }: { person: PersonDetail }) {
  const suspend = useSuspend(person.id);
  const unsuspend = useUnsuspend(person.id);
  const [reason, setReason] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const suspended = person.status === "suspended";
  return (
    <form
      class="card stack"
      aria-labelledby="status-title"
      onSubmit={(e) => {
        e.preventDefault();
        setDone(null);
        suspend.reset();
        unsuspend.reset();
        if (suspended) unsuspend.mutate(undefined, { onSuccess: () => setDone("The suspension is lifted: they can sign in again.") });
        else
          suspend.mutate(reason.trim(), {
            onSuccess: () => {
              setReason("");
              setDone("Suspended: their sessions ended, and their tokens and API keys are refused.");
            },
          });
      }}
    >
      <h2 id="status-title">Status</h2>
      {suspended ? (
        <p class="notice">Suspended{person.suspendedReason ? `: ${person.suspendedReason}` : "."}</p>
      ) : (
        <label class="field">
          <span>Reason (they are told it)</span>
          <input required maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
      )}
      <div>
        <button type="submit" class={`button${suspended ? "" : " danger"}`} disabled={suspend.isPending || unsuspend.isPending || (!suspended && !reason.trim())}>
          {suspended ? "Unsuspend" : "Suspend"}
        </button>
      </div>
      <Outcome done={done} error={suspend.error ?? unsuspend.error} />
    </form>
  );
}

/** Credits that do not reset at midnight, spent after the day's allowance. */
export function GrantCard({ person }: { person: PersonDetail }) {
  const grant = useGrant(person.id);
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const value = Number(amount);
  const valid = Number.isInteger(value) && value >= 1 && value <= 100_000_000;
  return (
    <form
      class="card stack"
      aria-labelledby="grant-title"
      onSubmit={(e) => {
        e.preventDefault();
        setDone(null);
        grant.mutate(
          { amount: value, note: note.trim() },
          {
            onSuccess: () => {
              setDone(`Granted ${value} credits.`);
              setAmount("");
              setNote("");
            },
          },
        );
      }}
    >
      <h2 id="grant-title">Grant credits</h2>
      <p class="muted small">They do not reset at midnight: spent once the day's allowance is used up.</p>
      <div class="admin-fields">
        <label class="field">
          <span>Amount</span>
          <input type="number" inputMode="numeric" required min={1} max={100_000_000} step={1} value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
        </label>
        <label class="field grow">
          <span>Note (for the audit log)</span>
          <input maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </label>
      </div>
      <div>
        <button type="submit" class="button primary" disabled={grant.isPending || !valid}>
          Grant credits
        </button>
      </div>
      <Outcome done={done} error={grant.error} />
    </form>
  );
}

/** Moves the account to another plan of PLANS. */
export function PlanCard({ person, plans }: { person: PersonDetail; plans: Plan[] | undefined }) {
  const setPlan = useSetPlan(person.id);
  const [chosen, setChosen] = useState(person.plan);
  const [done, setDone] = useState<string | null>(null);
  useEffect(() => setChosen(person.plan), [person.plan]);
  const name = (id: string) => plans?.find((p) => p.id === id)?.name ?? id;
  return (
    <form
      class="card stack"
      aria-labelledby="plan-title"
      onSubmit={(e) => {
        e.preventDefault();
        setDone(null);
        setPlan.mutate(chosen, { onSuccess: () => setDone(`Now on the ${name(chosen)} plan.`) });
      }}
    >
      <h2 id="plan-title">Plan</h2>
      <label class="field">
        <span>Plan</span>
        <select value={chosen} onChange={(e) => setChosen(e.currentTarget.value)} disabled={!plans}>
          {plans?.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name} ({p.dailyCredits} a day{p.models === "*" ? "" : `, ${p.models.length} model${p.models.length === 1 ? "" : "s"}`})
            </option>
          ))}
        </select>
      </label>
      <div>
        <button type="submit" class="button primary" disabled={setPlan.isPending || chosen === person.plan}>
          Change plan
        </button>
      </div>
      <Outcome done={done} error={setPlan.error} />
    </form>
  );
}

/** Erasure on request: everything of the account goes, after typing its id. */
export function EraseCard({ person }: { person: PersonDetail }) {
  const erase = useErase(person.id);
  const [, navigate] = useLocation();
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const close = () => {
    setOpen(false);
    setTyped("");
    erase.reset();
  };
  return (
    <section class="card stack danger-zone" aria-labelledby="erase-title">
      <h2 id="erase-title">Erase account</h2>
      <p class="muted">
        Ends every session, revokes every API key, and deletes their conversations, messages, shares, groups, presets, profile and sign-in methods.
        Usage rows stay for the totals, pointing at no one. This cannot be undone.
      </p>
      <div>
        <button type="button" class="button danger" onClick={() => setOpen(true)}>
          Erase account…
        </button>
      </div>
      <Dialog title={`Erase ${person.name || "this account"}?`} open={open} onClose={close}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            erase.mutate(undefined, { onSuccess: () => navigate("/admin/people", { state: { erased: person.name || person.id } }) });
          }}
        >
          <p>
            Everything of this account is deleted for good. Type its id, <code>{person.id}</code>, to confirm.
          </p>
          <label class="field">
            <span>Account id</span>
            <input class="mono" autoComplete="off" spellcheck={false} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          </label>
          {erase.error && (
            <p role="alert" class="error">
              {erase.error.message}
            </p>
          )}
          <div class="dialog-actions">
            <button type="button" class="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" class="button danger" disabled={typed.trim() !== person.id || erase.isPending}>
              Erase for good
            </button>
          </div>
        </form>
      </Dialog>
    </section>
  );
}
