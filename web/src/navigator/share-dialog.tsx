import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "preact/hooks";
import { ApiError, api, must, type Context } from "../api/client";
import { Dialog } from "../ui/dialog";
import { formatDateTime } from "../ui/time";
import { plainText } from "../ui/plain-text";

const EXPIRY = [
  { label: "Never", seconds: 0 },
  { label: "1 hour", seconds: 3600 },
  { label: "1 day", seconds: 86_400 },
  { label: "7 days", seconds: 604_800 },
  { label: "30 days", seconds: 2_592_000 },
];

/** Create the public link of a conversation, copy it, see its expiry, revoke it. */
export function ShareDialog({ context, onClose }: { context: Context; onClose: () => void }) {
  const client = useQueryClient();
  const [expiresIn, setExpiresIn] = useState(0);
  const [copied, setCopied] = useState(false);
  const key = ["share", context.id];
  // The live link of this context, if any, from the caller's list of links.
  const existing = useQuery({
    queryKey: key,
    queryFn: async () => {
      let cursor: string | undefined;
      for (;;) {
        const page = await must(api.GET("/shares", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } }));
        const found = page.items.find((s) => s.contextId === context.id);
        if (found || !page.nextCursor) return found ?? null;
        cursor = page.nextCursor;
      }
    },
  });
  const create = useMutation({
    mutationFn: () =>
      must(api.POST("/contexts/{id}/share", { params: { path: { id: context.id } }, body: expiresIn ? { expiresIn } : {} })),
    onSuccess: () => client.invalidateQueries({ queryKey: key }),
  });
  const revoke = useMutation({
    mutationFn: () => must(api.DELETE("/contexts/{id}/share", { params: { path: { id: context.id } } })),
    onSuccess: () => client.setQueryData(key, null),
  });
  const link = existing.data;
  const error = create.error ?? revoke.error;

  return (
    <Dialog title={`Share “${plainText(context.name)}”`} open onClose={onClose}>
      <p class="dialog-text muted">
        Anyone with the link can read this conversation as it is now, without logging in. Later messages are not shared
        until you update the link.
      </p>
      {link ? (
        <div class="stack">
          <label class="field">
            <span>Public link</span>
            <div class="copy-row">
              <input readOnly value={link.url} onFocus={(e) => e.currentTarget.select()} />
              <button
                type="button"
                class="button"
                onClick={() => {
                  void navigator.clipboard?.writeText(link.url).then(() => setCopied(true));
                }}
              >
                {copied ? "Copied" : "Copy link"}
              </button>
            </div>
          </label>
          <p class="muted">
            Shared {formatDateTime(link.createdAt)}. {link.expiresAt ? `Expires ${formatDateTime(link.expiresAt)}.` : "Does not expire."}
          </p>
          <div class="dialog-actions">
            <button type="button" class="button danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
              Revoke link
            </button>
            <button type="button" class="button" onClick={() => create.mutate()} disabled={create.isPending}>
              Update snapshot
            </button>
            <button type="button" class="button primary" onClick={onClose}>
              Done
            </button>
          </div>
        </div>
      ) : (
        <div class="stack">
          <label class="field">
            <span>Link expires</span>
            <select value={expiresIn} onChange={(e) => setExpiresIn(Number(e.currentTarget.value))}>
              {EXPIRY.map((o) => (
                <option key={o.seconds} value={o.seconds}>
                  {o.label}
                </option>
              ))}
            </select>
          </label>
          <div class="dialog-actions">
            <button type="button" class="button" onClick={onClose}>
              Cancel
            </button>
            <button type="button" class="button primary" onClick={() => create.mutate()} disabled={create.isPending || existing.isPending}>
              Create link
            </button>
          </div>
        </div>
      )}
      {error && (
        <p role="alert" class="error">
          {error instanceof ApiError ? error.message : String(error)}
        </p>
      )}
    </Dialog>
  );
}
