import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { useLocation, useSearch } from "wouter-preact";
import { api, must } from "../api/client";
import { useClientConfig } from "../api/client-config";
import { Loading } from "../ui/loading";
import { adoptSession } from "../auth/session";
import type { OidcConfig } from "./oidc";
import { lazy, Suspense } from "preact/compat";
import { WalletPicker } from "./wallet-picker";
import { CardPage } from "../ui/card-page";

// Only where the server asks for Turnstile: the login screen of every other deployment carries none of it.
const TurnstileWidget = lazy(() => import("./turnstile").then((m) => m.TurnstileWidget));

function nextPath(search: string) {
  const next = new URLSearchParams(search).get("next");
  return next?.startsWith("/") && !next.startsWith("//") ? next : "/";
}

/**
 * An unauthenticated visitor lands here: one button per way this server signs people in
 * (/client-config): the identity provider, a browser wallet, and in local mode a name. What a
 * new account needs here (`signUp`) comes with them: an invite code field where sign-up is by
 * invite, Cloudflare's check where Turnstile is configured, a word where sign-up is closed.
 */
export function LoginScreen() {
  const config = useClientConfig();
  const search = useSearch();
  const [, navigate] = useLocation();
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const nameInput = useRef<HTMLInputElement>(null);
  const methods = config.data?.signIn.methods ?? [];
  const oidc = methods.find((m): m is OidcConfig => m.method === "oidc");
  const wallet = methods.some((m) => m.method === "wallet");
  const local = methods.some((m) => m.method === "local");
  const signUp = config.data?.signUp;
  const [inviteCode, setInviteCode] = useState("");
  const [turnstileToken, setTurnstileToken] = useState<string | null>(null);
  // Each token serves one check: a new round draws a fresh widget after a sign-in used it.
  const [turnstileRound, setTurnstileRound] = useState(0);
  // Focused before the field is first drawn (an effect would run after that paint): a person who
  // types as the page appears loses no letters.
  useLayoutEffect(() => nameInput.current?.focus(), [local]);
  const next = nextPath(search);
  const expired = new URLSearchParams(search).has("expired");

  async function run(work: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  }

  /** What a new account needs, beside the proof: sent with every sign-in, used only by a new account. */
  const signUpFields = () => ({
    ...(signUp?.policy === "invite" && inviteCode.trim() ? { inviteCode: inviteCode.trim() } : {}),
    ...(turnstileToken ? { turnstileToken } : {}),
  });

  /** Signs in with a proof; a Turnstile token it carried is spent, whatever the answer. */
  async function signInWith(proof: { wallet: { message: string; signature: string } } | { local: { name: string } }) {
    const spent = turnstileToken !== null;
    try {
      signedIn(await must(api.POST("/auth/session", { body: { ...proof, ...signUpFields() } })));
    } finally {
      if (spent) setTurnstileRound((n) => n + 1);
    }
  }

  const signedIn = (reply: Parameters<typeof adoptSession>[0]) => {
    adoptSession(reply);
    navigate(next, { replace: true });
  };

  const localLogin = (e: Event) => {
    e.preventDefault();
    void run(() => signInWith({ local: { name: name.trim() } }));
  };

  const oidcLogin = () =>
    void run(async () => {
      // oauth4webapi only for the click that needs it.
      const { startOidcLogin } = await import("./oidc");
      await startOidcLogin(oidc!, next, "sign-in", signUp?.policy === "invite" && inviteCode.trim() ? inviteCode.trim() : undefined).catch((err: unknown) => {
        throw new Error(`The identity provider could not be reached: ${err instanceof Error ? err.message : String(err)}`);
      });
    });

  // The card shows once it knows its buttons: drawn with "Loading…" first, it would grow (and,
  // centred, move) when they came.
  if (config.isPending) {
    return (
      <main class="login">
        <Loading />
      </main>
    );
  }
  const noButtons = config.data && !oidc && !wallet && !local;
  return (
    <CardPage title="Welcome to Assistant Chat">
      {expired && <p class="notice">Your session ended. Sign in again: your unsent message is kept.</p>}
      {config.isError && (
        <p role="alert" class="error">
          {config.error.message}
        </p>
      )}
      {config.data && config.data.signIn.origin !== location.origin && (
        <p class="notice">
          This page is open at {location.host}, but the service's address is{" "}
          <a href={`${config.data.signIn.origin}${location.pathname}${location.search}`}>{config.data.signIn.origin}</a>: open it there to stay
          signed in and to sign in with a wallet.
        </p>
      )}
      {config.data?.signIn.unavailable && (
        <p role="alert" class="error">
          {config.data.signIn.unavailable}
        </p>
      )}
      {noButtons && !config.data?.signIn.unavailable && <p class="muted">This server offers no way to sign in to the web client.</p>}
      {signUp?.policy === "closed" && !noButtons && (
        <p class="notice">This service is not taking new accounts: sign in with the account you already have.</p>
      )}
      {signUp?.policy === "invite" && !noButtons && (
        <label class="field">
          <span>Invite code</span>
          <input
            name="invite-code"
            autoComplete="off"
            spellcheck={false}
            maxLength={200}
            value={inviteCode}
            onInput={(e) => setInviteCode(e.currentTarget.value)}
            aria-describedby="invite-hint"
          />
          <small id="invite-hint" class="muted">
            New accounts need an invite here. Only for your first sign-in: an account you already have signs in without it.
          </small>
        </label>
      )}
      {oidc && (
        <button class="button primary wide" type="button" onClick={oidcLogin} disabled={busy}>
          Continue with {oidc.name}
        </button>
      )}
      {wallet && (
        <WalletPicker
          label="Continue with a wallet"
          wide
          primary={!oidc && !local}
          disabled={busy}
          onProof={(proof) => signInWith({ wallet: proof })}
          onError={setError}
        />
      )}
      {local && (
        <>
          {(oidc || wallet) && (
            <p class="divider" aria-hidden="true">
              <span>or</span>
            </p>
          )}
          <form onSubmit={localLogin} class="stack">
            <p class="muted">This server runs without an identity provider: pick a name to sign in with.</p>
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
        </>
      )}
      {signUp?.turnstileSiteKey && (wallet || local) && (
        <div class="stack">
          <p class="muted">New here? Cloudflare checks that you are a person before an account is made.</p>
          <Suspense fallback={null}>
            <TurnstileWidget siteKey={signUp.turnstileSiteKey} round={turnstileRound} onToken={setTurnstileToken} onError={setError} />
          </Suspense>
        </div>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </CardPage>
  );
}
