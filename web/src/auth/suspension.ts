// An admin suspended this account: every request then answers 403 `account_suspended`, and so
// does signing in again. The first such answer, from any request, puts the app on the page that
// says so (app.tsx), instead of a chat whose every action fails.

let suspended: string | null = null;
const listeners = new Set<(message: string | null) => void>();

/** The server's sentence (it carries the admin's reason), or null while the account is not known to be suspended. */
export function suspensionMessage(): string | null {
  return suspended;
}

export function onSuspension(listener: (message: string | null) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function set(message: string | null) {
  if (message === suspended) return;
  suspended = message;
  for (const listener of listeners) listener(message);
}

/** A 403 `account_suspended` arrived with this message. */
export const accountSuspended = (message: string) => set(message);

/** The person left the suspended page (signed out): the next sign-in starts afresh. */
export const clearSuspension = () => set(null);
