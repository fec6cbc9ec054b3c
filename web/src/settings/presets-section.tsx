import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { Schemas } from "../api/client";
import { ConfirmDialog } from "../ui/dialog";
import { useProfile, useUpdateProfile } from "./profile-query";

type Preset = Schemas["Preset"];

/** The most characters of instructions (the server's limit, MAX_INSTRUCTIONS). */
export const MAX_INSTRUCTIONS = 8000;

/** The link that opens a new chat with a preset's instructions. */
export const newChatFrom = (preset: Preset) => `/?preset=${encodeURIComponent(preset.name)}`;

/** Named instructions kept in the profile: add, edit, delete, and start a chat from one. */
export function PresetsSection() {
  const profile = useProfile();
  const save = useUpdateProfile();
  // The preset being edited (its index), or "new"; null: the form is for a new one, closed.
  const [editing, setEditing] = useState<number | "new" | null>(null);
  const [name, setName] = useState("");
  const [instructions, setInstructions] = useState("");
  const [deleting, setDeleting] = useState<number | null>(null);
  if (!profile.data) return <p class="muted">Loading…</p>;
  const presets = profile.data.presets;

  const open = (at: number | "new") => {
    setEditing(at);
    setName(at === "new" ? "" : presets[at]!.name);
    setInstructions(at === "new" ? "" : presets[at]!.instructions);
    save.reset();
  };
  const store = (list: Preset[], then?: () => void) => save.mutate({ presets: list }, { onSuccess: then });

  const form = (
    <form
      class="card stack"
      aria-labelledby="preset-form"
      onSubmit={(e) => {
        e.preventDefault();
        const preset = { name: name.trim(), instructions: instructions.trim() };
        const list = editing === "new" ? [...presets, preset] : presets.map((p, i) => (i === editing ? preset : p));
        store(list, () => setEditing(null));
      }}
    >
      <h2 id="preset-form">{editing === "new" ? "New preset" : "Edit preset"}</h2>
      <label class="field">
        <span>Preset name</span>
        {/* biome-ignore lint/a11y/noAutofocus: the form opens when the person asks for it; its first field takes the typing */}
        <input required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} autoFocus />
      </label>
      <label class="field">
        <span>Instructions</span>
        <textarea
          required
          rows={6}
          maxLength={MAX_INSTRUCTIONS}
          placeholder="e.g. You are a patient gardening coach. Answer in metric units."
          value={instructions}
          onInput={(e) => setInstructions(e.currentTarget.value)}
        />
      </label>
      {save.isError && (
        <p role="alert" class="error">
          {save.error.message}
        </p>
      )}
      <div class="row-actions">
        <button type="submit" class="button primary" disabled={save.isPending || !name.trim() || !instructions.trim()}>
          Save preset
        </button>
        <button type="button" class="button" onClick={() => setEditing(null)}>
          Cancel
        </button>
      </div>
    </form>
  );

  return (
    <div class="stack wide-stack">
      <section class="card stack" aria-labelledby="presets-heading">
        <h2 id="presets-heading">Instruction presets</h2>
        <p class="muted">
          Instructions are sent to the model first, before every message of a conversation. Keep the ones you use often here
          and start a new chat from one; each conversation's own instructions can still be changed from its chat.
        </p>
        {presets.length === 0 ? (
          <p class="muted">No presets yet.</p>
        ) : (
          <ul class="preset-list" aria-label="Presets">
            {presets.map((p, i) => (
              <li key={p.name} class="preset" aria-label={p.name}>
                <div class="preset-text">
                  <strong>{p.name}</strong>
                  <span class="preset-instructions">{p.instructions}</span>
                </div>
                <div class="row-actions">
                  <Link href={newChatFrom(p)} class="button small primary">
                    New chat
                  </Link>
                  <button type="button" class="button small" aria-label={`Edit ${p.name}`} onClick={() => open(i)}>
                    Edit
                  </button>
                  <button type="button" class="button small danger" aria-label={`Delete ${p.name}`} onClick={() => setDeleting(i)}>
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )}
        {editing === null && (
          <div>
            <button type="button" class="button" onClick={() => open("new")} disabled={presets.length >= 50}>
              Add a preset
            </button>
          </div>
        )}
      </section>
      {editing !== null && form}
      <ConfirmDialog
        title="Delete this preset?"
        open={deleting !== null}
        confirmLabel="Delete"
        onClose={() => setDeleting(null)}
        onConfirm={() => {
          const at = deleting;
          setDeleting(null);
          store(presets.filter((_, i) => i !== at));
        }}
      >
        “{deleting === null ? "" : presets[deleting]?.name}” will be removed from your presets. Conversations started from it keep
        their instructions.
      </ConfirmDialog>
    </div>
  );
}
