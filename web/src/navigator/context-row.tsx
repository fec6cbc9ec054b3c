import { useCallback, useRef, useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { Context } from "../api/client";
import { Icon } from "../ui/icons";
import { Menu } from "../ui/menu";
import { plainText } from "../ui/plain-text";
import { ConversationMenuItems, type ConversationAction } from "./conversation-actions";

/** One conversation in the sidebar: a link, renamed in place, with an options menu. */
export function ContextRow(props: {
  /** From a list (answering: a reply is being written in it), or a search hit's. */
  context: Context & { answering?: boolean };
  active: boolean;
  renaming: boolean;
  onAction: (action: ConversationAction) => void;
  onRename: (name: string | null) => void;
}) {
  const { context } = props;
  // A name made from a first message may carry its Markdown (`# Title`): it reads as text.
  const name = plainText(context.name) || context.name;
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const close = useCallback((refocus: boolean) => {
    setOpen(false);
    if (refocus) button.current?.focus();
  }, []);

  if (props.renaming) {
    const renamed = (value: string) => (value.trim() && value.trim() !== name ? value.trim() : null);
    return (
      <form
        class="row renaming"
        onSubmit={(e) => {
          e.preventDefault();
          const value = new FormData(e.currentTarget).get("name");
          props.onRename(typeof value === "string" ? renamed(value) : null);
        }}
      >
        <input
          name="name"
          aria-label="New name"
          defaultValue={name}
          maxLength={200}
          ref={(el) => {
            if (el && document.activeElement !== el) {
              el.focus();
              el.select();
            }
          }}
          onKeyDown={(e) => e.key === "Escape" && props.onRename(null)}
          onBlur={(e) => props.onRename(renamed(e.currentTarget.value))}
        />
      </form>
    );
  }

  const choose = (action: ConversationAction) => {
    setOpen(false);
    props.onAction(action);
  };
  return (
    <div class={`row${props.active ? " active" : ""}`}>
      <Link href={`/c/${context.id}`} class="row-link" aria-current={props.active ? "page" : undefined} title={name}>
        {name}
        {/* A reply is being written there (in this tab or another, or after the tab was left). */}
        {context.answering && <span class="answering" title="Answering…" aria-label=", answering" role="img" />}
      </Link>
      <button
        ref={button}
        type="button"
        class="row-more"
        aria-label={`Options for ${name}`}
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
      >
        <Icon name="more" />
      </button>
      {open && button.current && (
        <Menu anchor={button.current} label={`Options for ${name}`} onClose={close}>
          <ConversationMenuItems context={context} choose={choose} />
        </Menu>
      )}
    </div>
  );
}
