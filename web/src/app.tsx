import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { Redirect, Route, Switch, useLocation } from "wouter-preact";
import { ApiError, setCreditHeadersHandler } from "./api/client";
import { currentSession, loginPath, onSessionChange, refreshSession, type Session } from "./auth/session";
import { onSuspension, suspensionMessage } from "./auth/suspension";
import { updateCredits } from "./chat/credits";
// Not split off: a card of a few hundred bytes, where a chunk of its own made the entry's
// shared code a third file that every page then asked for.
import { SuspendedScreen } from "./suspended/suspended-screen";

// Each kind of page loads only its own code (route-level splitting): the login page and the
// public share page do not carry the chat, the navigator and settings.
const LoginScreen = lazy(() => import("./login/login-screen").then((m) => m.LoginScreen));
const AuthCallback = lazy(() => import("./login/auth-callback").then((m) => m.AuthCallback));
const SharePage = lazy(() => import("./share/share-page").then((m) => m.SharePage));
const Shell = lazy(() => import("./app-shell").then((m) => m.Shell));

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

/**
 * Everything else needs a session: restored from the refresh cookie on a reload (no visit to
 * the provider), and without one the login screen (never an empty chat).
 */
function RequireLogin() {
  const [location, navigate] = useLocation();
  const client = useQueryClient();
  const [session, setSession] = useState<Session | null | "restoring">(() => currentSession() ?? "restoring");
  useEffect(() => {
    const off = onSessionChange((next, reason) => {
      setSession(next);
      if (next) return;
      client.clear();
      const here = window.location.pathname + window.location.search;
      // Ended on the server (another device signed it out, it expired): back through login,
      // then back here, with the message being typed kept (drafts are in sessionStorage).
      if (reason === "ended") navigate(`${loginPath(here)}${here === "/" ? "?" : "&"}expired`, { replace: true });
      else navigate("/login", { replace: true });
    });
    if (session === "restoring") void refreshSession().then((restored) => setSession(restored));
    setCreditHeadersHandler((remaining, resetAt) => updateCredits(client, { remaining, resetAt }));
    return off;
  }, [client]);
  if (session === "restoring") return <Loading />;
  if (!session) return <Redirect to={loginPath(location + window.location.search)} replace />;
  return <Shell />;
}

/** The server's sentence once a request answered 403 `account_suspended`, else null. */
function useSuspension(): string | null {
  const [message, setMessage] = useState(suspensionMessage);
  useEffect(() => onSuspension(setMessage), []);
  return message;
}

/** While a page's code arrives (a few kilobytes, usually from the cache). */
function Loading() {
  return (
    <p class="page-loading muted" role="status">
      Loading…
    </p>
  );
}
