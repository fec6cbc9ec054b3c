import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "preact/hooks";
import { api, must, type Schemas } from "../api/client";
import { useClientConfig } from "../api/client-config";
import type { OidcConfig } from "../login/oidc";
import { WalletPicker } from "../login/wallet-picker";
import { ConfirmDialog } from "../ui/dialog";
import { formatDateTime } from "../ui/time";
import { profileKey, useProfile } from "./profile-query";

type SignInMethod = Schemas["SignInMethod"];

const sessionsKey = ["sessions"] as const;

/** The account's sign-in methods (add a wallet or the provider, remove one while another remains) and its signed-in devices. */
export function SignInSection() {
  return (
    <div class="stack wide-stack">
      <SignInMethods />
      <Sessions />
    </div>
  );
}

function methodName(method: SignInMethod, provider: string | undefined): string {
  if (method.method === "wallet") return "Wallet";
  if (method.method === "local") return "Name (local login)";
  return provider ?? method.issuer;
}

function SignInMethods() {
  const client = useQueryClient();
  const profile = useProfile();
  const config = useClientConfig();
  const methods = profile.data?.identities ?? [];
  const offers = config.data?.signIn.methods ?? [];
  const oidc = offers.find((m): m is OidcConfig => m.method === "oidc");
  const [error, setError] = useState<string | null>(null);
  const [removing, setRemoving] = useState<SignInMethod | null>(null);
  const refresh = () => client.invalidateQueries({ queryKey: profileKey });
  const remove = useMutation({
    mutationFn: (id: string) => must(api.DELETE("/me/identities/{id}", { params: { path: { id } } })),
    onSuccess: () => Promise.all([refresh(), client.invalidateQueries({ queryKey: sessionsKey })]),
    onError: (err) => setError(err.message),
  });
  const addProvider = async () => {
    setError(null);
    try {
      const { startOidcLogin } = await import("../login/oidc");
      await startOidcLogin(oidc!, "/settings/sign-in", "link");
    } catch (err) {
      setError(`The identity provider could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  return (
    <section class="card stack" aria-labelledby="sign-in-methods">
      <h2 id="sign-in-methods">Sign-in methods</h2>
      <p class="muted">Any of these signs you in to this account. Add another so that losing one does not lock you out.</p>
      {methods.length > 0 && (
        <ul class="method-list" aria-label="Your sign-in methods">
          {methods.map((m) => (
            <li key={m.id} class="method-row">
              <div class="method-text">
                <span class="method-name">{methodName(m, oidc?.name)}</span>
                <span class="muted small">
                  <span class={m.method === "wallet" ? "mono" : undefined}>{m.label}</span> · added {formatDateTime(m.createdAt)}
                </span>
              </div>
              <button
                type="button"
                class="button small danger"
                aria-label={`Remove ${methodName(m, oidc?.name)} ${m.label}`}
                disabled={methods.length < 2 || remove.isPending}
                title={methods.length < 2 ? "Add another sign-in method before removing this one" : undefined}
                onClick={() => setRemoving(m)}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="row-actions wrap">
        {offers.some((m) => m.method === "wallet") && (
          <WalletPicker
            label="Add a wallet"
            onProof={async (proof) => {
              await must(api.POST("/me/identities", { body: { wallet: proof } }));
              await refresh();
            }}
            onError={setError}
          />
        )}
        {oidc && !methods.some((m) => m.method === "provider") && (
          <button type="button" class="button" onClick={() => void addProvider()}>
            Add {oidc.name}
          </button>
        )}
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <ConfirmDialog
        title="Remove this sign-in method?"
        open={!!removing}
        confirmLabel="Remove"
        onClose={() => setRemoving(null)}
        onConfirm={() => {
          setError(null);
          remove.mutate(removing!.id);
          setRemoving(null);
        }}
      >
        {removing && `${methodName(removing, oidc?.name)} ${removing.label} will no longer sign you in here, and the devices signed in with it are signed out.`}
      </ConfirmDialog>
    </section>
  );
}

function Sessions() {
  const client = useQueryClient();
  const sessions = useQuery({ queryKey: sessionsKey, queryFn: () => must(api.GET("/me/sessions")) });
  const refresh = () => client.invalidateQueries({ queryKey: sessionsKey });
  const end = useMutation({ mutationFn: (id: string) => must(api.DELETE("/me/sessions/{id}", { params: { path: { id } } })), onSuccess: refresh });
  const endOthers = useMutation({ mutationFn: () => must(api.DELETE("/me/sessions")), onSuccess: refresh });
  const items = sessions.data?.items ?? [];
  const others = items.filter((s) => !s.current).length;
  const how = { wallet: "a wallet", provider: "the identity provider", local: "a name" } as const;

  return (
    <section class="card stack" aria-labelledby="sessions">
      <h2 id="sessions">Sessions</h2>
      <p class="muted">The devices signed in to your account. One you sign out is signed out within minutes.</p>
      {sessions.isError && (
        <p role="alert" class="error">
          {sessions.error.message}
        </p>
      )}
      {items.length > 0 && (
        <ul class="method-list" aria-label="Signed-in devices">
          {items.map((s) => (
            <li key={s.id} class="method-row">
              <div class="method-text">
                <span class="method-name">
                  {s.device}
                  {s.current && <span class="badge">This device</span>}
                </span>
                <span class="muted small">
                  Signed in with {how[s.method]} on {formatDateTime(s.createdAt)} · last active {formatDateTime(s.lastUsedAt)}
                </span>
              </div>
              {!s.current && (
                <button type="button" class="button small" aria-label={`Sign out ${s.device}`} disabled={end.isPending} onClick={() => end.mutate(s.id)}>
                  Sign out
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <div>
        <button type="button" class="button" disabled={others === 0 || endOthers.isPending} onClick={() => endOthers.mutate()}>
          Sign out everywhere else
        </button>
      </div>
      {(end.isError || endOthers.isError) && (
        <p role="alert" class="error">
          {(end.error ?? endOthers.error)!.message}
        </p>
      )}
    </section>
  );
}
