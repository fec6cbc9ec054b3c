import { formatDuration } from "../ui/time";
import { useNow } from "../ui/use-now";
import { useCredits } from "./credits";

/** Remaining / allowance and the time to the 00:00 UTC reset, always in the top bar. */
export function CreditCounter() {
  const { data } = useCredits();
  const now = useNow(1000);
  if (!data) return <div class="credits" aria-hidden="true" />;
  const left = new Date(data.resetAt).getTime() - now;
  const low = data.remaining === 0;
  return (
    <div
      class={`credits${low ? " empty" : ""}`}
      role="status"
      aria-label={`Credits: ${data.remaining} of ${data.allowance} left today, reset in ${formatDuration(left)}`}
      title="Daily credits: each message costs the model's price. They reset at 00:00 UTC."
    >
      <span class="credits-count">
        <strong>{data.remaining}</strong>/{data.allowance}
      </span>
      <span class="credits-reset">resets in {formatDuration(left)}</span>
    </div>
  );
}
