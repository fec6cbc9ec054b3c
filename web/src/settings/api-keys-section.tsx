import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "preact/hooks";
import { api, must, type ApiKey, type Schemas } from "../api/client";
import { ConfirmDialog } from "../ui/dialog";
import { formatDateTime } from "../ui/time";

/** Create a named key (shown once), list keys by prefix, revoke with confirmation. */
export function ApiKeysSection() {
  const client = useQueryClient();
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => must(api.GET("/keys")) });
  const [name, setName] = useState("");
  const [created, setCreated] = useState<Schemas["CreatedApiKey"] | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const create = useMutation({
    mutationFn: (keyName: string) => must(api.POST("/keys", { body: { name: keyName } })),
    onSuccess: (key) => {
      setCreated(key);
      setCopied(false);
      setName("");
      void client.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const revoke = useMutation({
    mutationFn: (id: string) => must(api.DELETE("/keys/{id}", { params: { path: { id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["keys"] }),
  });

  return (
    <div class="stack wide-stack">
      <form
        class="card stack"
        aria-labelledby="new-key"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate(name.trim());
        }}
      >
        <h2 id="new-key">Create an API key</h2>
        <p class="muted">
          API keys let programs use this service as you: <code>Authorization: Bearer sk_…</code> on the API and the
          OpenAI-compatible <code>/v1</code> endpoints. They share your daily credits. See the{" "}
          <a href="/docs" target="_blank" rel="noopener">
            API reference
          </a>
          .
        </p>
        <div class="copy-row">
          <label class="field grow">
            <span>Key name</span>
            <input required maxLength={100} placeholder="e.g. laptop script" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <button class="button primary align-end" type="submit" disabled={create.isPending || !name.trim()}>
            Create key
          </button>
        </div>
        {create.isError && (
          <p role="alert" class="error">
            {create.error.message}
          </p>
        )}
      </form>

      {created && (
        <section class="card stack highlight" aria-labelledby="created-key">
          <h2 id="created-key">Your new key “{created.name}”</h2>
          <p class="warning" role="alert">
            Copy it now: this key won't be shown again.
          </p>
          <div class="copy-row">
            <input class="mono" readOnly aria-label="New API key" value={created.key} onFocus={(e) => e.currentTarget.select()} />
            <button type="button" class="button" onClick={() => void navigator.clipboard?.writeText(created.key).then(() => setCopied(true))}>
              {copied ? "Copied" : "Copy key"}
            </button>
          </div>
          <div>
            <button type="button" class="button" onClick={() => setCreated(null)}>
              I have saved it
            </button>
          </div>
        </section>
      )}

      <section class="card" aria-labelledby="key-list">
        <h2 id="key-list">Your keys</h2>
        {keys.data && keys.data.length === 0 && <p class="muted">No API keys yet.</p>}
        {keys.data && keys.data.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((k) => (
                  <tr key={k.id}>
                    <td>{k.name}</td>
                    <td class="mono">{k.prefix}…</td>
                    <td>{formatDateTime(k.createdAt)}</td>
                    <td>{formatDateTime(k.lastUsedAt)}</td>
                    <td>
                      <button type="button" class="button small danger" aria-label={`Revoke ${k.name}`} onClick={() => setRevoking(k)}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <ConfirmDialog
        title="Revoke this key?"
        open={!!revoking}
        confirmLabel="Revoke key"
        onClose={() => setRevoking(null)}
        onConfirm={() => {
          revoke.mutate(revoking!.id);
          setRevoking(null);
        }}
      >
        “{revoking?.name}” ({revoking?.prefix}…) stops working at once. Programs using it will get 401.
      </ConfirmDialog>
    </div>
  );
}
