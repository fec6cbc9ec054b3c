import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { Context } from "../api/client";
import { ConfirmDialog } from "../ui/dialog";
import { plainText } from "../ui/plain-text";
import { formatDateTime } from "../ui/time";
import { useContextPages, useRemoveContext, useUpdateContext } from "./queries";

/** /archived: the conversations taken out of the navigator, to open, restore or delete. */
export function ArchivedScreen() {
  const pages = useContextPages({ archived: true });
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const actions = { update: useUpdateContext(), remove: useRemoveContext() };
  const [deleting, setDeleting] = useState<Context | null>(null);
  const error = actions.update.error ?? actions.remove.error;

  return (
    <section class="settings" aria-labelledby="archived-title">
      <h1 id="archived-title">Archived conversations</h1>
      <p class="muted">
        Archived conversations are left out of the navigator and its search. Restore one to bring it back; it keeps its place
        by when it was last updated.
      </p>
      {pages.isError && (
        <p role="alert" class="error">
          {pages.error.message}
        </p>
      )}
      {error && (
        <p role="alert" class="error">
          {error.message}
        </p>
      )}
      {pages.data && items.length === 0 && <p class="card muted">Nothing is archived.</p>}
      {items.length > 0 && (
        <ul class="archived-list" aria-label="Archived conversations">
          {items.map((c) => {
            const name = plainText(c.name) || c.name;
            return (
              <li key={c.id} class="archived-item">
                <div class="archived-name">
                  <Link href={`/c/${c.id}`}>{name}</Link>
                  <span class="muted small">Last updated {formatDateTime(c.updatedAt)}</span>
                </div>
                <div class="row-actions">
                  <button
                    type="button"
                    class="button small"
                    aria-label={`Restore ${name}`}
                    disabled={actions.update.isPending}
                    onClick={() => actions.update.mutate({ id: c.id, patch: { archived: false } })}
                  >
                    Restore
                  </button>
                  <button type="button" class="button small danger" aria-label={`Delete ${name}`} onClick={() => setDeleting(c)}>
                    Delete
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      {pages.hasNextPage && (
        <button type="button" class="button small" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
          Show more
        </button>
      )}
      <ConfirmDialog
        title="Delete this conversation?"
        open={deleting !== null}
        confirmLabel="Delete"
        onClose={() => setDeleting(null)}
        onConfirm={() => {
          actions.remove.mutate(deleting!.id);
          setDeleting(null);
        }}
      >
        “{plainText(deleting?.name ?? "")}” and its messages will be deleted for good, and its share link stops working.
      </ConfirmDialog>
    </section>
  );
}
