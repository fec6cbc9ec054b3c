import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { useLocation } from "wouter-preact";
import { ConversationDialogs, ConversationMenuItems, exportConversation, type ConversationAction, type ConversationDialog } from "../navigator/conversation-actions";
import { useOpenConversation, useUpdateContext } from "../navigator/queries";
import { Icon } from "../ui/icons";
import { Menu } from "../ui/menu";
import { plainText } from "../ui/plain-text";

/**
 * The top bar of a conversation: its name (renamed in place) and its ⋯ menu, the same as its
 * row's in the navigator, which on a phone is a closed drawer. A new chat (`/`) has a name
 * but nothing to act on yet.
 */
export function ConversationHeader({ id }: { id: string | undefined }) {
  const context = useOpenConversation(id);
  // A name made from a first message may carry its Markdown (`# Title`): it reads as text.
  const name = context ? plainText(context.name) || context.name : undefined;
  const update = useUpdateContext();
  const [, navigate] = useLocation();
  const [renaming, setRenaming] = useState(false);
  const [menu, setMenu] = useState(false);
  const [dialog, setDialog] = useState<ConversationDialog | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const more = useRef<HTMLButtonElement>(null);
  const closeMenu = useCallback((refocus: boolean) => {
    setMenu(false);
    if (refocus) more.current?.focus();
  }, []);
  useEffect(() => {
    document.title = name ? `${name} · Assistant Chat` : "Assistant Chat";
  }, [name]);
  useEffect(() => {
    setRenaming(false);
    setFailure(null);
  }, [id]);

  const failed = (err: Error) => setFailure(err.message);
  const choose = (action: ConversationAction) => {
    setMenu(false);
    setFailure(null);
    if (!context) return;
    if (action === "rename") setRenaming(true);
    else if (action === "pin") update.mutate({ id: context.id, patch: { pinned: !context.pinned } }, { onError: failed });
    // The chat then says it is archived, with Restore beside it.
    else if (action === "archive") update.mutate({ id: context.id, patch: { archived: true } }, { onError: failed });
    else if (action === "export-markdown" || action === "export-json") void exportConversation(context, action === "export-json" ? "json" : "markdown").catch(failed);
    else setDialog({ action, context });
  };
  const rename = (value: string | null) => {
    setRenaming(false);
    more.current?.focus();
    const next = value?.trim();
    if (context && next && next !== name) update.mutate({ id: context.id, patch: { name: next } }, { onError: failed });
  };

  return (
    <>
      <div class="topbar-title">
        {renaming && context ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              rename(String(new FormData(e.currentTarget).get("name") ?? ""));
            }}
          >
            <input
              class="topbar-rename"
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
              onKeyDown={(e) => e.key === "Escape" && rename(null)}
              onBlur={(e) => rename(e.currentTarget.value)}
            />
          </form>
        ) : (
          <span class="topbar-name">{name ?? "Assistant Chat"}</span>
        )}
      </div>
      {context && (
        <button
          ref={more}
          type="button"
          class="icon-button"
          aria-label="Conversation options"
          aria-haspopup="menu"
          aria-expanded={menu}
          onClick={() => setMenu((m) => !m)}
        >
          <Icon name="more" />
        </button>
      )}
      {menu && context && more.current && (
        <Menu anchor={more.current} label="Conversation options" onClose={closeMenu}>
          <ConversationMenuItems context={context} choose={choose} />
        </Menu>
      )}
      {failure && (
        <p role="alert" class="topbar-notice error">
          <span>{failure}</span>
          <button type="button" class="icon-button small" aria-label="Dismiss" onClick={() => setFailure(null)}>
            <Icon name="close" size={14} />
          </button>
        </p>
      )}
      <ConversationDialogs dialog={dialog} onClose={() => setDialog(null)} onDeleted={() => navigate("/")} />
    </>
  );
}
