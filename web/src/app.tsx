import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { Redirect, Route, Switch, useLocation } from "wouter-preact";
import { ApiError, setCreditHeadersHandler } from "./api/client";
import { currentSession, type EndReason, lastEndReason, lastRefreshUnreachable, loginPath, mayHaveSession, onSessionChange, refreshSession, type Session } from "./auth/session";
import { UnreachableScreen } from "./auth/unreachable-screen";
import { clientConfigQuery } from "./api/client-config";
import { conversationQuery } from "./chat/conversation-query";
import { creditsQuery, updateCredits } from "./chat/credits";
import { modelsQuery } from "./chat/models-query";
import { profileQuery } from "./settings/profile-read";
import { sharedQuery } from "./share/shared-query";
import { Loading } from "./ui/loading";
import { startPrepareWorker } from "./ui/prepare-worker-start";
import { onSuspension, suspensionMessage } from "./auth/suspension";
// Not split off: a card of a few hundred bytes, where a chunk of its own made the entry's
// shared code a third file that every page then asked for.
import { SuspendedScreen } from "./suspended/suspended-screen";

// Each kind of page loads only its own code (route-level splitting): the login page and the
// public share page do not carry the chat, the navigator and settings.
const loadSharePage = () => import("./share/share-page");
const loadShell = () => import("./app-shell");
const loadLoginScreen = () => import("./login/login-screen");
const LoginScreen = lazy(() => loadLoginScreen().then((m) => m.LoginScreen));
const AuthCallback = lazy(() => import("./login/auth-callback").then((m) => m.AuthCallback));
const SharePage = lazy(() => loadSharePage().then((m) => m.SharePage));
const Shell = lazy(() => loadShell().then((m) => m.Shell));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again; a network blip may.
      retry: (count, error) => count < 2 && !(error instanceof ApiError && error.status < 500),
      refetchOnWindowFocus: false,
    },
  },
});

/**
 * What the page opened at this address asks for first, asked for at once, as the page starts:
 * a conversation's or a shared snapshot's data and the worker that renders its replies come
 * in while the page's own code does, and the signed-in app's code while the session is
 * restored, rather than each after the other (on a phone's network, each wait is a round
 * trip or more).
 */
export function startEarly() {
  const path = location.pathname;
  const shared = /^\/s\/([^/]+)$/.exec(path)?.[1];
  if (shared) {
    startPrepareWorker();
    void loadSharePage();
    void queryClient.prefetchQuery(sharedQuery(decodeURIComponent(shared)));
    return;
  }
  if (path === "/auth/callback") return;
  if (path === "/login" || !mayHaveSession()) {
    // The login screen, and how this deployment signs people in, which it shows.
    void loadLoginScreen();
    void queryClient.prefetchQuery(clientConfigQuery());
    return;
  }
  const conversation = /^\/c\/([^/]+)$/.exec(path)?.[1];
  if (conversation) startPrepareWorker();
  // Its parts in files of their own (the chat, Settings) come with it: the page's HTML names
  // them (web/vite-route-pages.ts). Asked for here with import(), each would be a file the
  // entry loads, and the code they share with the app a dozen files of its own.
  void loadShell();
  // The first read of sessionStorage (the chat's draft) waits for the browser to hand the
  // tab's storage over: 5-8 ms on the bench's phone, here in a task of its own rather than
  // in the chat's first render.
  if (conversation || path === "/") setTimeout(() => sessionStorage.length, 0);
  void refreshSession().then((session) => {
    if (!session) return;
    // What the chat, the top bar and Settings show, so that they first render with it rather
    // than once more for each answer. A task each: the five requests made at once were one
    // long task (each fetch() costs a few ms on a phone).
    const asks = [
      () => queryClient.prefetchQuery(profileQuery()),
      () => queryClient.prefetchQuery(creditsQuery()),
      () => queryClient.prefetchQuery(modelsQuery()),
      () => queryClient.prefetchQuery(clientConfigQuery()),
    ];
    if (conversation) {
      const focusId = new URLSearchParams(location.search).get("m");
      asks.unshift(() => queryClient.prefetchInfiniteQuery(conversationQuery(decodeURIComponent(conversation), focusId)));
    }
    for (const ask of asks) setTimeout(() => void ask(), 0);
  });
}

export function App() {
  const suspended = useSuspension();
  return (
    <QueryClientProvider client={queryClient}>
      <Suspense fallback={<Loading />}>
        {suspended !== null ? (
          <SuspendedScreen message={suspended} />
        ) : (
        <Switch>
          <Route path="/login" component={LoginScreen} />
          <Route path="/auth/callback" component={AuthCallback} />
          <Route path="/s/:token">{(params) => <SharePage token={params.token} />}</Route>
          <Route>
            <RequireLogin />
          </Route>
        </Switch>
        )}
      </Suspense>
    </QueryClientProvider>
  );
}

/** What a refresh found, as the page shows it: no answer (offline, the server's 5xx) is not a sign-out. */
const restoredAs = (found: Session | null) => found ?? (lastRefreshUnreachable() ? "unreachable" : null);

/**
 * Everything else needs a session: restored from the refresh cookie on a reload (no visit to
 * the provider), and without one the login screen (never an empty chat).
 */
function RequireLogin() {
  const [location, navigate] = useLocation();
  const client = useQueryClient();
  const [session, setSession] = useState<Session | null | "restoring" | "unreachable">(() => currentSession() ?? "restoring");
  useEffect(() => {
    // Once per end: the refresh below may learn of one the listener has already taken.
    let handled = false;
    const ended = (reason: EndReason | undefined) => {
      if (handled) return;
      handled = true;
      setSession(null);
      client.clear();
      const here = window.location.pathname + window.location.search;
      // Ended on the server (another device signed it out, it expired): back through login,
      // then back here, with the message being typed kept (drafts are in sessionStorage).
      if (reason === "ended") navigate(`${loginPath(here)}${here === "/" ? "?" : "&"}expired`, { replace: true });
      else navigate("/login", { replace: true });
    };
    const off = onSessionChange((next, reason) => {
      if (!next) return ended(reason);
      handled = false;
      setSession(next);
    });
    // The refresh may have begun with the page (startEarly), and ended before this listened.
    if (session === "restoring") void refreshSession().then((found) => (found || lastEndReason() !== "ended" ? setSession(restoredAs(found)) : ended("ended")));
    setCreditHeadersHandler((remaining, resetAt) => updateCredits(client, { remaining, resetAt }));
    return off;
  }, [client]);
  // Once this page listens, a session the server ended reaches the listener above.
  const retry = () => {
    setSession("restoring");
    void refreshSession().then((found) => setSession(restoredAs(found)));
  };
  if (session === "restoring") return <Loading />;
  if (session === "unreachable") return <UnreachableScreen onRetry={retry} />;
  if (!session) return <Redirect to={loginPath(location + window.location.search)} replace />;
  return <Shell />;
}

/** The server's sentence once a request answered 403 `account_suspended`, else null. */
function useSuspension(): string | null {
  const [message, setMessage] = useState(suspensionMessage);
  useEffect(() => onSuspension(setMessage), []);
  return message;
}
