import { CardPage } from "../ui/card-page";

/**
 * The page could not ask whether this browser is still signed in (offline, or the service
 * answered with a server error). The session is not ended by that, so the person is not sent
 * to sign in: they are told what happened and can ask again.
 */
export function UnreachableScreen({ onRetry }: { onRetry: () => void }) {
  return (
    <CardPage title="Can't reach the service">
      <p class="notice" role="alert">
        This page could not reach the service to restore your session. Being offline does not sign you out.
      </p>
      <p class="muted">Check your connection, then try again.</p>
      <button type="button" class="button wide" onClick={onRetry}>
        Try again
      </button>
    </CardPage>
  );
}
