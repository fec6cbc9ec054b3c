/**
 * While a page's code and data arrive: a spinner, its words for screen readers only. The page
 * first shows itself with what it is for (the chat, settings), not with a word that stands in
 * for it; the work of starting it then comes before that first paint, rather than after it
 * while a person may already try to use the page.
 */
export function Loading() {
  return (
    <div class="page-loading" role="status">
      <span class="spinner" aria-hidden="true" />
      <span class="visually-hidden">Loading…</span>
    </div>
  );
}
