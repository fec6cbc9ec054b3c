import { lazy, Suspense } from "preact/compat";
import { useEffect, useRef, useState } from "preact/hooks";
import { Link, useRoute } from "wouter-preact";
import { CreditCounter } from "./chat/credit-counter";
import { useProfile } from "./settings/profile-query";
import { Icon } from "./ui/icons";
import { Loading } from "./ui/loading";
import { useAfterFirstPaint } from "./ui/use-after-first-paint";

/** Wider than a phone: the navigator is a column beside the page (the drawer's breakpoint in styles.css). */
const WIDE_SCREEN = "(min-width: 769px)";

// The chat (with its header's title and menu) and the navigator are files of their own:
// Settings need no chat, and a phone shows the navigator only once its drawer opens (a wide
// screen asks for it as this file starts). The page's HTML names the chat's file for a
// conversation or a new chat, so it comes with this one.
const loadChat = () => import("./chat/chat-page");
const loadSidebar = () => import("./navigator/sidebar");
if (matchMedia(WIDE_SCREEN).matches) void loadSidebar();
const ChatScreen = lazy(() => loadChat().then((m) => m.ChatScreen));
const ConversationHeader = lazy(() => loadChat().then((m) => m.ConversationHeader));
const Sidebar = lazy(() => loadSidebar().then((m) => m.Sidebar));
// Settings are a page of their own, loaded when opened; so is the archive.
const SettingsScreen = lazy(() => import("./settings/settings-screen").then((m) => m.SettingsScreen));
const ArchivedScreen = lazy(() => import("./navigator/archived-screen").then((m) => m.ArchivedScreen));
// The Admin area is loaded for admins only: no one else ever downloads its code.
const AdminScreen = lazy(() => import("./admin/admin-screen").then((m) => m.AdminScreen));

/** Whether the screen is WIDE_SCREEN, as it changes. */
function useWideScreen(): boolean {
  const [query] = useState(() => matchMedia(WIDE_SCREEN));
  const [wide, setWide] = useState(query.matches);
  useEffect(() => {
    const change = () => setWide(query.matches);
    query.addEventListener("change", change);
    return () => query.removeEventListener("change", change);
  }, [query]);
  return wide;
}

/** The signed-in app: the navigator, the top bar, and the chat or settings. */
export function Shell() {
  const [drawer, setDrawer] = useState(false);
  // The navigator comes the task after the first paint of the chat (or settings): one long
  // task at start is what makes a page feel stuck. On a phone it is a closed drawer, made the
  // first time it opens (and kept): nobody sees it before.
  const afterPaint = useAfterFirstPaint();
  const wide = useWideScreen();
  const [opened, setOpened] = useState(false);
  if (drawer && !opened) setOpened(true);
  const navigator = afterPaint && (wide || drawer || opened);
  const toggle = useRef<HTMLButtonElement>(null);
  const closeDrawer = () => {
    setDrawer(false);
    toggle.current?.focus();
  };
  const [, chat] = useRoute<{ id: string }>("/c/:id");
  const [isSettings, settings] = useRoute<{ section?: string }>("/settings/:section?");
  const [isHome] = useRoute("/");
  const [isArchived] = useRoute("/archived");
  const [isAdmin, admin] = useRoute<{ "*"?: string }>("/admin/*?");
  // The drawer takes focus when it opens, so keyboard and screen-reader users land in it.
  useEffect(() => {
    if (drawer) document.getElementById("drawer-close")?.focus();
  }, [drawer]);
  useEffect(() => {
    const close = (e: KeyboardEvent) => e.key === "Escape" && !document.querySelector("dialog[open]") && setDrawer(false);
    document.addEventListener("keydown", close);
    return () => document.removeEventListener("keydown", close);
  }, []);

  return (
    <div class={`shell${drawer ? " drawer-open" : ""}`}>
      <a href="#main" class="skip-link">
        Skip to content
      </a>
      <div class="sidebar-wrap" id="navigator">
        {navigator && (
          <Suspense fallback={null}>
            <Sidebar onNavigate={() => setDrawer(false)} onClose={closeDrawer} />
          </Suspense>
        )}
      </div>
      {drawer && <div class="scrim" onClick={closeDrawer} aria-hidden="true" />}
      <div class="main">
        <header class="topbar">
          <button
            ref={toggle}
            type="button"
            class="icon-button drawer-toggle"
            aria-label="Open conversations"
            aria-expanded={drawer}
            aria-controls="navigator"
            onClick={() => setDrawer(true)}
          >
            <Icon name="menu" />
          </button>
          {isSettings || isArchived || isAdmin ? (
            <div class="topbar-title">{isSettings ? "Settings" : isArchived ? "Archived" : "Admin"}</div>
          ) : (
            <Suspense fallback={<div class="topbar-title" />}>
              <ConversationHeader id={chat?.id} />
            </Suspense>
          )}
          <CreditCounter />
        </header>
        <main id="main" class="content" tabIndex={-1}>
          {isSettings ? (
            <Suspense fallback={<p class="muted settings">Loading…</p>}>
              <SettingsScreen section={settings?.section} />
            </Suspense>
          ) : isArchived ? (
            <Suspense fallback={<p class="muted settings">Loading…</p>}>
              <ArchivedScreen />
            </Suspense>
          ) : isAdmin ? (
            <AdminArea path={admin?.["*"] ?? ""} />
          ) : chat || isHome ? (
            <Suspense fallback={<Loading />}>
              <ChatScreen contextId={chat?.id} />
            </Suspense>
          ) : (
            <div class="welcome">
              <h1>Nothing here</h1>
              <p class="muted">This page does not exist.</p>
            </div>
          )}
        </main>
      </div>
    </div>
  );
}

/** /admin for an admin (GET /me's role); anyone else is told it is not available, and the area's code stays unloaded. */
function AdminArea({ path }: { path: string }) {
  const profile = useProfile();
  if (profile.isError) {
    return (
      <p role="alert" class="error settings">
        {profile.error.message}
      </p>
    );
  }
  if (!profile.data) return <p class="muted settings">Loading…</p>;
  if (profile.data.role !== "admin") {
    return (
      <div class="welcome">
        <h1>Not available</h1>
        <p class="muted">The Admin area is for the service's admins.</p>
        <Link href="/">Back to the chat</Link>
      </div>
    );
  }
  return (
    <Suspense fallback={<p class="muted settings">Loading…</p>}>
      <AdminScreen path={path} />
    </Suspense>
  );
}
