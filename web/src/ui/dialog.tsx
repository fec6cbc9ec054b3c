import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";

/** A modal <dialog>: the browser traps focus, Escape closes it, focus returns on close. */
export function Dialog(props: { title: string; open: boolean; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: a click on the backdrop closes it; Escape closes a modal <dialog> natively
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      onClose={props.onClose}
      onClick={(e) => e.target === ref.current && props.onClose()}
    >
      {props.open && (
        <div class="dialog-body">
          <h2 id={titleId}>{props.title}</h2>
          {props.children}
        </div>
      )}
    </dialog>
  );
}

/** Asks before something that cannot be undone. */
export function ConfirmDialog(props: {
  title: string;
  open: boolean;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  children: ComponentChildren;
}) {
  return (
    <Dialog title={props.title} open={props.open} onClose={props.onClose}>
      <div class="dialog-text">{props.children}</div>
      <div class="dialog-actions">
        <button type="button" class="button" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" class="button danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}
