import { useState } from "preact/hooks";
import type { Schemas } from "../api/client";
import { MAX_INSTRUCTIONS } from "../settings/presets-section";
import { Dialog } from "../ui/dialog";

/**
 * Edits a conversation's instructions (its system prompt, sent to the model first on every
 * message), blank for none; a preset from the profile can fill them in.
 */
export function InstructionsDialog(props: {
  value: string | null;
  presets: Schemas["Preset"][];
  /** A conversation not created yet: the instructions go with its first message. */
  newChat: boolean;
  saving?: boolean;
  error?: string | null;
  onSave: (instructions: string | null) => void;
  onClose: () => void;
}) {
  const [text, setText] = useState(props.value ?? "");
  return (
    <Dialog title="Instructions for this conversation" open onClose={props.onClose}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          props.onSave(text.trim() ? text : null);
        }}
      >
        <p class="muted small">
          Sent to the model first, before every message{props.newChat ? " of the conversation your next message starts" : ""}: who it
          should be, how to answer, what to keep in mind.
        </p>
        {props.presets.length > 0 && (
          <label class="field">
            <span>Start from a preset</span>
            <select
              value=""
              onChange={(e) => {
                const preset = props.presets.find((p) => p.name === e.currentTarget.value);
                if (preset) setText(preset.instructions);
              }}
            >
              <option value="">Choose a preset…</option>
              {props.presets.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label class="field">
          <span>Instructions</span>
          <textarea
            rows={8}
            maxLength={MAX_INSTRUCTIONS}
            placeholder="e.g. You are a patient gardening coach. Answer in metric units."
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            autoFocus
          />
        </label>
        {props.error && (
          <p role="alert" class="error">
            {props.error}
          </p>
        )}
        <div class="dialog-actions">
          {props.value && (
            <button type="button" class="button danger" onClick={() => props.onSave(null)} disabled={props.saving}>
              Remove instructions
            </button>
          )}
          <button type="button" class="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="button primary" disabled={props.saving}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}
