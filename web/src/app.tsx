import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { Redirect, Route, Switch, useLocation } from "wouter-preact";
import { ApiError, setCreditHeadersHandler, setUnauthorizedHandler } from "./api/client";
import { loginPath, readSession } from "./auth/session";
import { updateCredits } from "./chat/credits";

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
  return (
    <QueryClientProvider client={queryClient}>
      <Suspense fallback={<Loading />}>
        <Switch>
          <Route path="/login" component={LoginScreen} />
          <Route path="/auth/callback" component={AuthCallback} />
          <Route path="/s/:token">{(params) => <SharePage token={params.token} />}</Route>
          <Route>
            <RequireLogin />
          </Route>
        </Switch>
      </Suspense>
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

/** While a page's code arrives (a few kilobytes, usually from the cache). */
function Loading() {
  return (
    <p class="page-loading muted" role="status">
      Loading…
    </p>
  );
}
