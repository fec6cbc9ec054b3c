import { useVirtualizer } from "@tanstack/react-virtual";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { Link, useLocation, useRoute } from "wouter-preact";
import type { Context, Group } from "../api/client";
import { signOut } from "../auth/session";
import { useProfile } from "../settings/profile-query";
import { Avatar } from "../ui/avatar";
import { ConfirmDialog } from "../ui/dialog";
import { Icon } from "../ui/icons";
import { Snippet } from "../ui/markdown";
import { Menu } from "../ui/menu";
import { plainText } from "../ui/plain-text";
import { useAfterFirstPaint } from "../ui/use-after-first-paint";
import { ContextRow } from "./context-row";
import { ConversationDialogs, exportConversation, type ConversationAction, type ConversationDialog } from "./conversation-actions";
import { useContextPages, useGroupActions, useGroups, useOpenConversation, useSearch, useUpdateContext } from "./queries";

const ROW_HEIGHT = 36;

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

/** The navigator: new chat, search, groups as folders, and every conversation, newest first. */
export function Sidebar({ onNavigate, onClose }: { onNavigate: () => void; onClose: () => void }) {
  const [, params] = useRoute<{ id: string }>("/c/:id");
  const [isArchived] = useRoute("/archived");
  const [isAdmin] = useRoute("/admin/*?");
  const [, navigate] = useLocation();
  const activeId = params?.id;
  const [query, setQuery] = useState("");
  // The list (windowed: it measures the page) comes the task after the first paint.
  const listed = useAfterFirstPaint();
  const q = useDebounced(query.trim(), 250);
  const search = useSearch(q);
  const groups = useGroups();
  const profile = useProfile();
  const update = useUpdateContext();
  const [renaming, setRenaming] = useState<string | null>(null);
  const [dialog, setDialog] = useState<ConversationDialog | null>(null);
  // Folders opened or closed by hand; the one holding the open conversation is open unless closed.
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const activeGroup = useOpenConversation(activeId)?.groupId ?? undefined;
  // What the last action did, or why it failed: archived conversations can be brought back from here.
  const [notice, setNotice] = useState<NoticeText | null>(null);

  // One entry per conversation, at its best match (the server ranks them): several matching
  // messages of one conversation (or its name) are still one conversation to open.
  const seen = new Set<string>();
  const hits = (search.data?.items ?? []).filter((h) => !seen.has(h.contextId) && seen.add(h.contextId));

  const failed = (err: Error) => setNotice({ text: err.message, error: true });
  const onAction = (context: Context) => (action: ConversationAction) => {
    const name = plainText(context.name);
    setNotice(null);
    if (action === "rename") setRenaming(context.id);
    else if (action === "pin") update.mutate({ id: context.id, patch: { pinned: !context.pinned } }, { onError: failed });
    else if (action === "archive") {
      const restore = () => update.mutate({ id: context.id, patch: { archived: false } }, { onSuccess: () => setNotice(null), onError: failed });
      update.mutate({ id: context.id, patch: { archived: true } }, { onSuccess: () => setNotice({ text: `Archived “${name}”.`, undo: restore }), onError: failed });
    } else if (action === "export-markdown") void exportConversation(context, "markdown").catch(failed);
    else if (action === "export-json") void exportConversation(context, "json").catch(failed);
    else setDialog({ action, context });
  };
  const onRename = (context: Context) => (name: string | null) => {
    setRenaming(null);
    if (name && name !== context.name) update.mutate({ id: context.id, patch: { name } });
  };
  const row = (context: Context) => (
    <ContextRow
      context={context}
      active={context.id === activeId}
      renaming={renaming === context.id}
      onAction={onAction(context)}
      onRename={onRename(context)}
    />
  );

  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: one listener for every link inside (closes the drawer); the links keep their own keys
    <nav class="sidebar" aria-label="Conversations" onClick={(e) => (e.target as Element).closest?.("a") && onNavigate()}>
      <div class="sidebar-top">
        <div class="sidebar-actions">
          <Link href="/" class="button new-chat">
            <Icon name="plus" /> New chat
          </Link>
          <button id="drawer-close" type="button" class="icon-button drawer-close" aria-label="Close conversations" onClick={onClose}>
            <Icon name="close" />
          </button>
        </div>
        <div class="search-box">
          <Icon name="search" size={16} />
          <input
            type="search"
            aria-label="Search conversations"
            placeholder="Search conversations"
            value={query}
            onInput={(e) => setQuery(e.currentTarget.value)}
          />
        </div>
      </div>

      {notice && <Notice notice={notice} onDismiss={() => setNotice(null)} />}
      {q ? (
        <div class="sidebar-scroll">
          <h2 class="sidebar-heading">Results</h2>
          {search.isError && (
            <p role="alert" class="error small">
              {search.error.message}
            </p>
          )}
          {search.data && search.data.items.length === 0 && <p class="muted small pad">No conversation matches “{q}”.</p>}
          <ul class="results" aria-label="Search results">
            {hits.map((hit) => (
              <li key={hit.contextId}>
                <Link href={`/c/${hit.contextId}${hit.messageId ? `?m=${hit.messageId}` : ""}`} class="result">
                  <span class="result-name">{plainText(hit.contextName)}</span>
                  <span class="result-snippet">
                    <Snippet text={hit.snippet} words={q.split(/\s+/)} />
                  </span>
                </Link>
              </li>
            ))}
          </ul>
        </div>
      ) : !listed ? (
        <div class="sidebar-scroll" />
      ) : (
        <ConversationList
          activeRow={row}
          groups={groups.data?.items ?? []}
          isOpen={(g) => open[g.id] ?? g.id === activeGroup}
          toggle={(g) => setOpen((o) => ({ ...o, [g.id]: !(o[g.id] ?? g.id === activeGroup) }))}
          onError={failed}
        />
      )}

      <Link href="/archived" class="sidebar-link" aria-current={isArchived ? "page" : undefined}>
        <Icon name="archive" size={16} /> Archived
      </Link>
      {/* The operator's console, for the admins ADMINS names (GET /me's role). */}
      {profile.data?.role === "admin" && (
        <Link href="/admin" class="sidebar-link" aria-current={isAdmin ? "page" : undefined}>
          <Icon name="shield" size={16} /> Admin
        </Link>
      )}
      <div class="sidebar-bottom">
        <Link href="/settings" class="account-link">
          <Avatar url={profile.data?.avatarUrl} name={profile.data?.name ?? "?"} />
          <span class="user-name">{profile.data?.name ?? "…"}</span>
          <span class="visually-hidden">: settings</span>
        </Link>
        {/* The session ends on the server too; the app then shows the login screen. */}
        <button type="button" class="icon-button" aria-label="Log out" onClick={() => void signOut()}>
          <Icon name="logout" />
        </button>
      </div>

      <ConversationDialogs dialog={dialog} onClose={() => setDialog(null)} onDeleted={(context) => context.id === activeId && navigate("/")} />
    </nav>
  );
}

function ConversationList(props: {
  activeRow: (c: Context) => preact.JSX.Element;
  groups: Group[];
  isOpen: (group: Group) => boolean;
  toggle: (group: Group) => void;
  onError: (err: Error) => void;
}) {
  const pages = useContextPages({ groupId: "none", pinned: false });
  const pinned = useContextPages({ pinned: true });
  const pinnedItems = pinned.data?.pages.flatMap((p) => p.items) ?? [];
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const scroller = useRef<HTMLDivElement>(null);
  const above = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLDivElement>(null);
  // Where the windowed list starts, below the pinned ones and the folders: measured when what
  // is above it changes size (a folder opened, its conversations arrived), not at every render,
  // which made the browser lay out the whole page again each time.
  const [margin, setMargin] = useState(0);
  useLayoutEffect(() => {
    const observer = new ResizeObserver(() => setMargin(list.current?.offsetTop ?? 0));
    observer.observe(above.current!);
    return () => observer.disconnect();
  }, []);
  // Windowed: only the rows in view exist in the page, so 5,000 conversations scroll smoothly.
  const virtual = useVirtualizer({
    count: items.length + (pages.hasNextPage ? 1 : 0),
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    scrollMargin: margin,
  });
  const shown = virtual.getVirtualItems();
  const lastShown = shown[shown.length - 1]?.index ?? 0;
  useEffect(() => {
    if (lastShown >= items.length - 1 && pages.hasNextPage && !pages.isFetchingNextPage) void pages.fetchNextPage();
  }, [lastShown, items.length, pages.hasNextPage, pages.isFetchingNextPage]);

  return (
    <div class="sidebar-scroll" ref={scroller}>
      <div ref={above}>
      {pinnedItems.length > 0 && (
        <>
          <h2 class="sidebar-heading" id="pinned-heading">
            Pinned
          </h2>
          <ul class="pinned-items" aria-labelledby="pinned-heading">
            {pinnedItems.map((c) => (
              <li key={c.id}>{props.activeRow(c)}</li>
            ))}
            {pinned.hasNextPage && (
              <li>
                <button type="button" class="link-button small" onClick={() => void pinned.fetchNextPage()}>
                  Show more
                </button>
              </li>
            )}
          </ul>
        </>
      )}
      {props.groups.length > 0 && (
        <>
          <h2 class="sidebar-heading">Groups</h2>
          <ul class="folders">
            {props.groups.map((g) => (
              <Folder key={g.id} group={g} open={props.isOpen(g)} toggle={() => props.toggle(g)} row={props.activeRow} onError={props.onError} />
            ))}
          </ul>
        </>
      )}
      <h2 class="sidebar-heading">Chats</h2>
      {pages.isError && (
        <p role="alert" class="error small">
          {pages.error.message}
        </p>
      )}
      {pages.data && items.length === 0 && <p class="muted small pad">No conversations yet.</p>}
      </div>
      {/* biome-ignore lint/a11y/useSemanticElements: a virtualised list: rows are positioned divs, only those in view exist */}
      <div ref={list} role="list" aria-label="Chats" style={{ height: `${virtual.getTotalSize()}px`, position: "relative" }}>
        {shown.map((v) => {
          const context = items[v.index];
          return (
            // biome-ignore lint/a11y/useSemanticElements: a row of the virtualised list above
            <div
              key={context?.id ?? "more"}
              role="listitem"
              style={{ position: "absolute", top: 0, left: 0, right: 0, height: `${v.size}px`, transform: `translateY(${v.start - margin}px)` }}
            >
              {context ? props.activeRow(context) : <span class="muted small pad">Loading more…</span>}
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** A group: opens and closes, and its own menu renames it in place or deletes it (its conversations stay). */
function Folder(props: { group: Group; open: boolean; toggle: () => void; row: (c: Context) => preact.JSX.Element; onError: (err: Error) => void }) {
  const { group } = props;
  const pages = useContextPages({ groupId: group.id }, props.open);
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const { renameGroup, deleteGroup } = useGroupActions();
  const [menu, setMenu] = useState(false);
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const more = useRef<HTMLButtonElement>(null);
  const closeMenu = useCallback((refocus: boolean) => {
    setMenu(false);
    if (refocus) more.current?.focus();
  }, []);
  const rename = (value: string | null) => {
    setRenaming(false);
    const name = value?.trim();
    if (name && name !== group.name) renameGroup.mutate({ id: group.id, name }, { onError: props.onError });
  };
  const label = `group ${group.name}`;

  return (
    <li class="folder">
      {renaming ? (
        <form
          class="row renaming"
          onSubmit={(e) => {
            e.preventDefault();
            rename(String(new FormData(e.currentTarget).get("name") ?? ""));
          }}
        >
          <input
            name="name"
            aria-label="New group name"
            defaultValue={group.name}
            maxLength={100}
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
        <div class="row folder-row">
          <button type="button" class="folder-toggle" aria-expanded={props.open} onClick={props.toggle}>
            <span class={`chevron${props.open ? " open" : ""}`}>
              <Icon name="chevron" size={14} />
            </span>
            <Icon name="folder" size={16} />
            <span class="folder-name">{group.name}</span>
            <span class="count">
              {group.contextCount}
              <span class="visually-hidden"> conversations</span>
            </span>
          </button>
          <button
            ref={more}
            type="button"
            class="row-more"
            aria-label={`Options for ${label}`}
            aria-haspopup="menu"
            aria-expanded={menu}
            onClick={() => setMenu((m) => !m)}
          >
            <Icon name="more" />
          </button>
          {menu && more.current && (
            <Menu anchor={more.current} label={`Options for ${label}`} onClose={closeMenu}>
              <button role="menuitem" type="button" onClick={() => {
                  setMenu(false);
                  setRenaming(true);
                }}>
                Rename group
              </button>
              <button role="menuitem" type="button" class="danger" onClick={() => {
                  setMenu(false);
                  setDeleting(true);
                }}>
                Delete group
              </button>
            </Menu>
          )}
        </div>
      )}
      {props.open && (
        <ul class="folder-items" aria-label={group.name}>
          {items.map((c) => (
            <li key={c.id}>{props.row(c)}</li>
          ))}
          {pages.data && items.length === 0 && <li class="muted small pad">Empty</li>}
          {pages.hasNextPage && (
            <li>
              <button type="button" class="link-button small" onClick={() => void pages.fetchNextPage()}>
                Show more
              </button>
            </li>
          )}
        </ul>
      )}
      <ConfirmDialog
        title={`Delete the group “${group.name}”?`}
        open={deleting}
        confirmLabel="Delete group"
        onClose={() => setDeleting(false)}
        onConfirm={() => {
          setDeleting(false);
          deleteGroup.mutate(group.id, { onError: props.onError });
        }}
      >
        {group.contextCount === 0
          ? "The group is empty."
          : `Its ${group.contextCount === 1 ? "conversation stays" : `${group.contextCount} conversations stay`}, outside any group.`}
      </ConfirmDialog>
    </li>
  );
}

type NoticeText = { text: string; error?: boolean; undo?: () => void };

/**
 * What the last action did ("Archived …", with Undo), or why it failed. A success goes by
 * itself after 10 seconds, but not while the pointer or the keyboard's focus is on it (to
 * reach Undo); a failure stays until dismissed.
 */
function Notice({ notice, onDismiss }: { notice: NoticeText; onDismiss: () => void }) {
  const ref = useRef<HTMLParagraphElement>(null);
  const [held, setHeld] = useState(false);
  useEffect(() => {
    const el = ref.current!;
    const hold = () => setHeld(true);
    const release = (e: Event) => {
      const next = (e as FocusEvent).relatedTarget as Node | null;
      if (e.type === "focusout" ? !el.contains(next) : !el.contains(document.activeElement)) setHeld(false);
    };
    const events = [["mouseenter", hold], ["focusin", hold], ["mouseleave", release], ["focusout", release]] as const;
    for (const [name, listener] of events) el.addEventListener(name, listener);
    return () => {
      for (const [name, listener] of events) el.removeEventListener(name, listener);
    };
  }, []);
  useEffect(() => {
    if (held || notice.error) return;
    const timer = setTimeout(onDismiss, 10_000);
    return () => clearTimeout(timer);
  }, [notice, held]);
  return (
    <p ref={ref} role={notice.error ? "alert" : "status"} class={`sidebar-notice${notice.error ? " error" : ""}`}>
      <span>{notice.text}</span>
      {notice.undo && (
        <button type="button" class="link-button small" onClick={notice.undo}>
          Undo
        </button>
      )}
      <button type="button" class="icon-button small" aria-label="Dismiss" onClick={onDismiss}>
        <Icon name="close" size={14} />
      </button>
    </p>
  );
}
