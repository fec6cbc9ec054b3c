import { useEffect, useRef, useState } from "preact/hooks";
import type { Context } from "../api/client";
import { Dialog } from "../ui/dialog";
import { plainText } from "../ui/plain-text";
import { useCreateGroup, useGroups, useUpdateContext } from "./queries";

/** Move a conversation into a group (a new one if need be), or out of any group. */
export function MoveDialog({ context, onClose }: { context: Context; onClose: () => void }) {
  const groups = useGroups();
  const update = useUpdateContext();
  const createGroup = useCreateGroup();
  const [choice, setChoice] = useState<string>(context.groupId ?? "");
  const [newName, setNewName] = useState("");
  const error = update.error ?? createGroup.error;
  // Choosing "New group" is choosing to type its name: the field takes the focus.
  const newNameInput = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (choice === "__new") newNameInput.current?.focus();
  }, [choice === "__new"]);

  async function move(e: Event) {
    e.preventDefault();
    let groupId: string | null = choice || null;
    if (choice === "__new") groupId = (await createGroup.mutateAsync(newName.trim())).id;
    await update.mutateAsync({ id: context.id, patch: { groupId } });
    onClose();
  }

  return (
    <Dialog title={`Move “${plainText(context.name)}”`} open onClose={onClose}>
      <form class="stack" onSubmit={(e) => void move(e).catch(() => {})}>
        <fieldset class="choices">
          <legend class="visually-hidden">Group</legend>
          <label class="choice">
            <input type="radio" name="group" value="" checked={choice === ""} onChange={() => setChoice("")} /> No group
          </label>
          {groups.data?.items.map((g) => (
            <label class="choice" key={g.id}>
              <input type="radio" name="group" value={g.id} checked={choice === g.id} onChange={() => setChoice(g.id)} /> {g.name}
            </label>
          ))}
          <label class="choice">
            <input type="radio" name="group" value="__new" checked={choice === "__new"} onChange={() => setChoice("__new")} /> New group
          </label>
          {choice === "__new" && (
            <label class="field">
              <span>New group name</span>
              <input ref={newNameInput} required maxLength={100} value={newName} onInput={(e) => setNewName(e.currentTarget.value)} />
            </label>
          )}
        </fieldset>
        {error && (
          <p role="alert" class="error">
            {error.message}
          </p>
        )}
        <div class="dialog-actions">
          <button type="button" class="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="button primary" disabled={update.isPending || (choice === "__new" && !newName.trim())}>
            Move
          </button>
        </div>
      </form>
    </Dialog>
  );
}
