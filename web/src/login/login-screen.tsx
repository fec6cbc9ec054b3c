import { useEffect, useRef, useState } from "preact/hooks";
import { useLocation, useSearch } from "wouter-preact";
import { api, must } from "../api/client";
import { useClientConfig } from "../api/client-config";
import { saveSession } from "../auth/session";

function nextPath(search: string) {
  const next = new URLSearchParams(search).get("next");
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

/** An unauthenticated visitor lands here: a name (local login) or the identity provider. */
export function LoginScreen() {
  const config = useClientConfig();
  const search = useSearch();
  const [, navigate] = useLocation();
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const nameInput = useRef<HTMLInputElement>(null);
  useEffect(() => nameInput.current?.focus(), [config.data?.auth.mode]);
  const next = nextPath(search);
  const expired = new URLSearchParams(search).has("expired");

  async function localLogin(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = await must(api.POST("/auth/local", { body: { name: name.trim() } }));
      saveSession(body.token, body.expiresAt ? new Date(body.expiresAt).getTime() : null);
      navigate(next, { replace: true });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  async function oidcLogin() {
    if (config.data?.auth.mode !== "oidc") return;
    setBusy(true);
    setError(null);
    try {
      // oauth4webapi only for the click that needs it: a local login never loads it.
      const { startOidcLogin } = await import("./oidc");
      await startOidcLogin(config.data.auth, next);
    } catch (err) {
      setError(`The identity provider could not be reached: ${err instanceof Error ? err.message : String(err)}`);
      setBusy(false);
    }
  }

  return (
    <main class="login">
      <div class="login-card">
        <div class="brand" aria-hidden="true">
          <img src="/favicon.svg" alt="" width="40" height="40" />
        </div>
        <h1>Welcome to Assistant Chat</h1>
        {expired && <p class="notice">Your session ended. Log in again: your unsent message is kept.</p>}
        {config.isPending && <p class="muted">Loading…</p>}
        {config.isError && <p role="alert" class="error">{config.error.message}</p>}
        {config.data?.auth.mode === "local" && (
          <form onSubmit={localLogin} class="stack">
            <p class="muted">This server runs without an identity provider: pick a name to log in with.</p>
            <label class="field">
              <span>Your name</span>
              <input
                name="name"
                autoComplete="username"
                required
                maxLength={100}
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
                ref={nameInput}
              />
            </label>
            <button class="button primary wide" type="submit" disabled={busy || name.trim() === ""}>
              Log in
            </button>
          </form>
        )}
        {config.data?.auth.mode === "oidc" && (
          <div class="stack">
            <p class="muted">Log in with {new URL(config.data.auth.issuer).host}: it offers its own ways to sign in.</p>
            <button class="button primary wide" type="button" onClick={oidcLogin} disabled={busy}>
              Continue to log in
            </button>
          </div>
        )}
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </div>
    </main>
  );
}
