import { useEffect, useState } from "preact/hooks";
import { Link, useLocation } from "wouter-preact";
import { fetchClientConfig } from "../api/client-config";
import { finishOidcLogin } from "./oidc";

/** The OIDC redirect URI: finishes the code exchange, then goes where the person was. */
export function AuthCallback() {
  const [, navigate] = useLocation();
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    (async () => {
      const config = await fetchClientConfig();
      if (config.auth.mode !== "oidc") throw new Error("this server does not use an identity provider");
      navigate(await finishOidcLogin(config.auth), { replace: true });
    })().catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
  }, []);
  return (
    <main class="login">
      <div class="login-card">
        {error ? (
          <>
            <h1>Login did not finish</h1>
            <p role="alert" class="error">
              {error}
            </p>
            <Link href="/login" class="button primary wide">
              Back to login
            </Link>
          </>
        ) : (
          <p role="status">Logging you in…</p>
        )}
      </div>
    </main>
  );
}
