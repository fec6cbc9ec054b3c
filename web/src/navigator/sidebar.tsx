import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { Link, useLocation, useRoute } from "wouter-preact";
import type { Context, Group } from "../api/client";
import { signOut } from "../auth/session";
import { useProfile } from "../settings/profile-query";
import { Avatar } from "../ui/avatar";
import { ConfirmDialog } from "../ui/dialog";
import { Icon } from "../ui/icons";
import { Snippet } from "../ui/markdown";
import { plainText } from "../ui/plain-text";
import { ContextRow, type RowAction } from "./context-row";
import { MoveDialog } from "./move-dialog";
import { useContextActions, useContextPages, useGroups, useSearch } from "./queries";
import { downloadFile } from "../api/download";
import { ShareDialog } from "./share-dialog";

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
  const [, navigate] = useLocation();
  const activeId = params?.id;
  const [query, setQuery] = useState("");
  const q = useDebounced(query.trim(), 250);
  const search = useSearch(q);
  const groups = useGroups();
  const profile = useProfile();
  const actions = useContextActions();
  const [renaming, setRenaming] = useState<string | null>(null);
  const [dialog, setDialog] = useState<{ action: "move" | "share" | "delete"; context: Context } | null>(null);
  const [open, setOpen] = useState<Record<string, boolean>>({});
  // What the last action did, or why it failed: archived conversations can be brought back from here.
  const [notice, setNotice] = useState<{ text: string; error?: boolean; undo?: () => void } | null>(null);

  // A conversation whose messages match needs no second entry for its matching name.
  const items = search.data?.items ?? [];
  const withMessages = new Set(items.filter((h) => h.messageId).map((h) => h.contextId));
  const hits = items.filter((h) => h.messageId || !withMessages.has(h.contextId));

  const failed = (err: Error) => setNotice({ text: err.message, error: true });
  const onAction = (context: Context) => (action: RowAction) => {
    const name = plainText(context.name);
    setNotice(null);
    if (action === "rename") setRenaming(context.id);
    else if (action === "pin") actions.update.mutate({ id: context.id, patch: { pinned: !context.pinned } }, { onError: failed });
    else if (action === "archive") {
      const restore = () => actions.update.mutate({ id: context.id, patch: { archived: false } }, { onSuccess: () => setNotice(null), onError: failed });
      actions.update.mutate({ id: context.id, patch: { archived: true } }, { onSuccess: () => setNotice({ text: `Archived “${name}”.`, undo: restore }), onError: failed });
    } else if (action === "export-markdown") void downloadFile(`/contexts/${context.id}/export?format=markdown`, "conversation.md").catch(failed);
    else if (action === "export-json") void downloadFile(`/contexts/${context.id}/export?format=json`, "conversation.json").catch(failed);
    else setDialog({ action, context });
  };
  const onRename = (context: Context) => (name: string | null) => {
    setRenaming(null);
    if (name && name !== context.name) actions.update.mutate({ id: context.id, patch: { name } });
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

      {notice && (
        <p role={notice.error ? "alert" : "status"} class={`sidebar-notice${notice.error ? " error" : ""}`}>
          <span>{notice.text}</span>
          {notice.undo && (
            <button type="button" class="link-button small" onClick={notice.undo}>
              Undo
            </button>
          )}
          <button type="button" class="icon-button small" aria-label="Dismiss" onClick={() => setNotice(null)}>
            <Icon name="close" size={14} />
          </button>
        </p>
      )}
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
              <li key={`${hit.contextId}-${hit.messageId}`}>
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
      ) : (
        <ConversationList activeRow={row} groups={groups.data?.items ?? []} open={open} setOpen={setOpen} />
      )}

      <Link href="/archived" class="sidebar-link" aria-current={isArchived ? "page" : undefined}>
        <Icon name="archive" size={16} /> Archived
      </Link>
      <div class="sidebar-bottom">
        <Link href="/settings" class="user">
          <Avatar url={profile.data?.avatarUrl} name={profile.data?.name ?? "?"} />
          <span class="user-name">{profile.data?.name ?? "…"}</span>
          <span class="visually-hidden">: settings</span>
        </Link>
        {/* The session ends on the server too; the app then shows the login screen. */}
        <button type="button" class="icon-button" aria-label="Log out" onClick={() => void signOut()}>
          <Icon name="logout" />
        </button>
      </div>

      {dialog?.action === "share" && <ShareDialog context={dialog.context} onClose={() => setDialog(null)} />}
      {dialog?.action === "move" && <MoveDialog context={dialog.context} onClose={() => setDialog(null)} />}
      <ConfirmDialog
        title="Delete this conversation?"
        open={dialog?.action === "delete"}
        confirmLabel="Delete"
        onClose={() => setDialog(null)}
        onConfirm={() => {
          const context = dialog!.context;
          setDialog(null);
          actions.remove.mutate(context.id, { onSuccess: () => context.id === activeId && navigate("/") });
        }}
      >
        “{plainText(dialog?.context.name ?? "")}” and its messages will be deleted for good, and its share link stops working.
      </ConfirmDialog>
    </nav>
  );
}

function ConversationList(props: {
  activeRow: (c: Context) => preact.JSX.Element;
  groups: Group[];
  open: Record<string, boolean>;
  setOpen: (fn: (o: Record<string, boolean>) => Record<string, boolean>) => void;
}) {
  const pages = useContextPages({ groupId: "none", pinned: false });
  const pinned = useContextPages({ pinned: true });
  const pinnedItems = pinned.data?.pages.flatMap((p) => p.items) ?? [];
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const scroller = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLDivElement>(null);
  const [margin, setMargin] = useState(0);
  useLayoutEffect(() => setMargin(list.current?.offsetTop ?? 0));
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
              <Folder
                key={g.id}
                group={g}
                open={!!props.open[g.id]}
                toggle={() => props.setOpen((o) => ({ ...o, [g.id]: !o[g.id] }))}
                row={props.activeRow}
              />
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
      <div ref={list} role="list" aria-label="Chats" style={{ height: `${virtual.getTotalSize()}px`, position: "relative" }}>
        {shown.map((v) => {
          const context = items[v.index];
          return (
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

function Folder(props: { group: Group; open: boolean; toggle: () => void; row: (c: Context) => preact.JSX.Element }) {
  const pages = useContextPages({ groupId: props.group.id }, props.open);
  const items = pages.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <li class="folder">
      <button type="button" class="folder-toggle" aria-expanded={props.open} onClick={props.toggle}>
        <span class={`chevron${props.open ? " open" : ""}`}>
          <Icon name="chevron" size={14} />
        </span>
        <Icon name="folder" size={16} />
        <span class="folder-name">{props.group.name}</span>
        <span class="count" aria-label={`${props.group.contextCount} conversations`}>
          {props.group.contextCount}
        </span>
      </button>
      {props.open && (
        <ul class="folder-items" aria-label={props.group.name}>
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
    </li>
  );
}
