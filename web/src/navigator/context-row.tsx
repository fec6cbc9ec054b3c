import { useEffect, useRef, useState } from "preact/hooks";
import { Link } from "wouter-preact";
import type { Context } from "../api/client";
import { Icon } from "../ui/icons";
import { plainText } from "../ui/plain-text";

export type RowAction = "rename" | "move" | "share" | "delete";

/** One conversation in the sidebar: a link, renamed in place, with an options menu. */
export function ContextRow(props: {
  context: Context;
  active: boolean;
  renaming: boolean;
  onAction: (action: RowAction) => void;
  onRename: (name: string | null) => void;
}) {
  const { context } = props;
  // A name made from a first message may carry its Markdown (`# Title`): it reads as text.
  const name = plainText(context.name) || context.name;
  const [menu, setMenu] = useState<{ top: number; left: number } | null>(null);
  const button = useRef<HTMLButtonElement>(null);
  const firstItem = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!menu) return;
    firstItem.current?.focus();
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent && e.key !== "Escape") return;
      if (e instanceof MouseEvent && (e.target as Element).closest?.(".menu")) return;
      setMenu(null);
      if (e instanceof KeyboardEvent) button.current?.focus();
    };
    document.addEventListener("keydown", close);
    document.addEventListener("mousedown", close);
    return () => {
      document.removeEventListener("keydown", close);
      document.removeEventListener("mousedown", close);
    };
  }, [!!menu]);

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
            if (el && document.activeElement !== el) (el.focus(), el.select());
          }}
          onKeyDown={(e) => e.key === "Escape" && props.onRename(null)}
          onBlur={(e) => props.onRename(renamed(e.currentTarget.value))}
        />
      </form>
    );
  }

  const choose = (action: RowAction) => {
    setMenu(null);
    props.onAction(action);
  };
  return (
    <div class={`row${props.active ? " active" : ""}`}>
      <Link href={`/c/${context.id}`} class="row-link" aria-current={props.active ? "page" : undefined} title={name}>
        {name}
      </Link>
      <button
        ref={button}
        type="button"
        class="row-more"
        aria-label={`Options for ${name}`}
        aria-haspopup="menu"
        aria-expanded={!!menu}
        onClick={() => {
          const r = button.current!.getBoundingClientRect();
          setMenu(menu ? null : { top: r.bottom + 4, left: Math.min(r.left, window.innerWidth - 190) });
        }}
      >
        <Icon name="more" />
      </button>
      {menu && (
        <div class="menu" role="menu" aria-label={`Options for ${name}`} style={{ top: `${menu.top}px`, left: `${menu.left}px` }}>
          <button ref={firstItem} role="menuitem" type="button" onClick={() => choose("rename")}>
            Rename
          </button>
          <button role="menuitem" type="button" onClick={() => choose("move")}>
            Move to group
          </button>
          <button role="menuitem" type="button" onClick={() => choose("share")}>
            Share
          </button>
          <button role="menuitem" type="button" class="danger" onClick={() => choose("delete")}>
            Delete
          </button>
        </div>
      )}
    </div>
  );
}
