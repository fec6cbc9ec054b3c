import type { Context } from "../api/client";
import { downloadFile } from "../api/download";
import { ConfirmDialog } from "../ui/dialog";
import { plainText } from "../ui/plain-text";
import { MoveDialog } from "./move-dialog";
import { useRemoveContext } from "./queries";
import { ShareDialog } from "./share-dialog";

// What can be done with a conversation, the same wherever its menu is: a row of the
// navigator, or the top bar of the open conversation (where, on a phone, the navigator is a
// closed drawer).

export type ConversationAction = "rename" | "move" | "pin" | "archive" | "share" | "export-markdown" | "export-json" | "delete";

/** The menu's items, in the order both menus show them. */
export function ConversationMenuItems({ context, choose }: { context: Context; choose: (action: ConversationAction) => void }) {
  const item = (action: ConversationAction, label: string, danger = false) => (
    <button role="menuitem" type="button" class={danger ? "danger" : undefined} onClick={() => choose(action)}>
      {label}
    </button>
  );
  return (
    <>
      {item("rename", "Rename")}
      {item("move", "Move to group")}
      {item("pin", context.pinned ? "Unpin" : "Pin")}
      {item("archive", "Archive")}
      {item("share", "Share")}
      {item("export-markdown", "Export as Markdown")}
      {item("export-json", "Export as JSON")}
      {item("delete", "Delete", true)}
    </>
  );
}

/** Downloads the conversation: the branch shown as Markdown, or every branch as JSON. */
export function exportConversation(context: Context, format: "markdown" | "json"): Promise<void> {
  return downloadFile(`/contexts/${context.id}/export?format=${format}`, format === "markdown" ? "conversation.md" : "conversation.json");
}

/** The actions that ask something first: a dialog each. */
export type ConversationDialog = { action: "move" | "share" | "delete"; context: Context };

export function ConversationDialogs(props: { dialog: ConversationDialog | null; onClose: () => void; onDeleted: (context: Context) => void }) {
  const { dialog } = props;
  return (
    <>
      {dialog?.action === "share" && <ShareDialog context={dialog.context} onClose={props.onClose} />}
      {dialog?.action === "move" && <MoveDialog context={dialog.context} onClose={props.onClose} />}
      <DeleteDialog context={dialog?.action === "delete" ? dialog.context : null} onClose={props.onClose} onDeleted={props.onDeleted} />
    </>
  );
}

/** Always there (closed), so that closing it hands the focus back to what opened it. */
function DeleteDialog(props: { context: Context | null; onClose: () => void; onDeleted: (context: Context) => void }) {
  const remove = useRemoveContext();
  return (
    <ConfirmDialog
      title="Delete this conversation?"
      open={props.context !== null}
      confirmLabel="Delete"
      onClose={props.onClose}
      onConfirm={() => {
        const context = props.context!;
        props.onClose();
        remove.mutate(context.id, { onSuccess: () => props.onDeleted(context) });
      }}
    >
      “{plainText(props.context?.name ?? "")}” and its messages will be deleted for good, and its share link stops working.
    </ConfirmDialog>
  );
}
