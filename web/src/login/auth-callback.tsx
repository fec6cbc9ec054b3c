import { useEffect, useState } from "preact/hooks";
import { Link, useLocation } from "wouter-preact";
import { fetchClientConfig } from "../api/client-config";
import { api, must } from "../api/client";
import { adoptSession, currentSession, refreshSession } from "../auth/session";
import { finishOidcLogin, type OidcConfig } from "./oidc";

/**
 * The OpenID Connect redirect URI: finishes the code exchange, trades the provider's token
 * for a session (or adds the provider's account to the signed-in person's, from Settings),
 * then goes where the person was.
 */
export function AuthCallback() {
  const [, navigate] = useLocation();
  const [error, setError] = useState<string | null>(null);
  // Where "back" leads when it fails: the login screen, or Settings when adding the account there.
  const [back, setBack] = useState({ href: "/login", label: "Back to sign-in" });
  useEffect(() => {
    (async () => {
      const config = await fetchClientConfig();
      const oidc = config.signIn.methods.find((m): m is OidcConfig => m.method === "oidc");
      if (!oidc) throw new Error("this server does not sign in with an identity provider");
      const { accessToken, next, purpose, inviteCode } = await finishOidcLogin(oidc);
      if (purpose === "link") {
        setBack({ href: "/settings/sign-in", label: "Back to Settings" });
        // The page was left for the provider: the session comes back from its cookie.
        if (!currentSession() && !(await refreshSession())) throw new Error("your session ended meanwhile: sign in, then add the account again");
        await must(api.POST("/me/identities", { body: { accessToken } }));
      } else {
        adoptSession(await must(api.POST("/auth/session", { body: { accessToken, ...(inviteCode ? { inviteCode } : {}) } })));
      }
      navigate(next, { replace: true });
    })().catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
  }, []);
  return (
    <main class="login">
      <div class="login-card">
        {error ? (
          <>
            <h1>Sign-in did not finish</h1>
            <p role="alert" class="error">
              {error}
            </p>
            <Link href={back.href} class="button primary wide">
              {back.label}
            </Link>
          </>
        ) : (
          <p role="status">Signing you in…</p>
        )}
      </div>
    </main>
  );
}
