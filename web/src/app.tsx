import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "preact/hooks";
import { Redirect, Route, Switch, useLocation, useRoute } from "wouter-preact";
import { ApiError, setCreditHeadersHandler, setUnauthorizedHandler } from "./api/client";
import { loginPath, readSession } from "./auth/session";
import { ChatScreen } from "./chat/chat-screen";
import { CreditCounter } from "./chat/credit-counter";
import { updateCredits } from "./chat/credits";
import { AuthCallback } from "./login/auth-callback";
import { LoginScreen } from "./login/login-screen";
import { Sidebar } from "./navigator/sidebar";
import { SettingsScreen } from "./settings/settings-screen";
import { SharePage } from "./share/share-page";
import { Icon } from "./ui/icons";
import { plainText } from "./ui/plain-text";

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again; a network blip may.
      retry: (count, error) => count < 2 && !(error instanceof ApiError && error.status < 500),
      refetchOnWindowFocus: false,
    },
  },
});

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <Switch>
        <Route path="/login" component={LoginScreen} />
        <Route path="/auth/callback" component={AuthCallback} />
        <Route path="/s/:token">{(params) => <SharePage token={params.token} />}</Route>
        <Route>
          <RequireLogin />
        </Route>
      </Switch>
    </QueryClientProvider>
  );
}

/** Everything else needs a session: without one, the login screen (never an empty chat). */
function RequireLogin() {
  const [location, navigate] = useLocation();
  const client = useQueryClient();
  const [session, setSession] = useState(readSession);
  useEffect(() => {
    // An expired session: back through login, then back here (the draft is in sessionStorage).
    setUnauthorizedHandler(() => {
      client.clear();
      setSession(null);
      const here = window.location.pathname + window.location.search;
      navigate(`${loginPath(here)}${here === "/" ? "?" : "&"}expired`, { replace: true });
    });
    setCreditHeadersHandler((remaining, resetAt) => updateCredits(client, { remaining, resetAt }));
  }, [client]);
  if (!session) return <Redirect to={loginPath(location + window.location.search)} replace />;
  return <Shell onLogout={() => (client.clear(), setSession(null))} />;
}

/** The open conversation's name (from the cache the chat screen fills), else the app's. */
function ConversationTitle({ id }: { id: string | undefined }) {
  const client = useQueryClient();
  const [, rerender] = useState(0);
  useEffect(() => client.getQueryCache().subscribe(() => rerender((n) => n + 1)), [client]);
  const stored = id ? client.getQueryData<{ pages: Array<{ name: string }> }>(["context", id])?.pages[0]?.name : undefined;
  const name = stored === undefined ? undefined : plainText(stored);
  useEffect(() => {
    document.title = name ? `${name} · Assistant Chat` : "Assistant Chat";
  }, [name]);
  return <span class="topbar-name">{name ?? "Assistant Chat"}</span>;
}

function Shell({ onLogout }: { onLogout: () => void }) {
  const [drawer, setDrawer] = useState(false);
  const toggle = useRef<HTMLButtonElement>(null);
  const closeDrawer = () => {
    setDrawer(false);
    toggle.current?.focus();
  };
  const [, chat] = useRoute<{ id: string }>("/c/:id");
  const [isSettings, settings] = useRoute<{ section?: string }>("/settings/:section?");
  const [isHome] = useRoute("/");
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
        <Sidebar onNavigate={() => setDrawer(false)} onClose={closeDrawer} onLogout={onLogout} />
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
          <div class="topbar-title">{isSettings ? "Settings" : <ConversationTitle id={chat?.id} />}</div>
          <CreditCounter />
        </header>
        <main id="main" class="content" tabIndex={-1}>
          {isSettings ? (
            <SettingsScreen section={settings?.section} />
          ) : chat || isHome ? (
            <ChatScreen contextId={chat?.id} />
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
