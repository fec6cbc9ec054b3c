import * as oauth from "oauth4webapi";
import type { ClientConfig } from "../api/client-config";
import { OIDC_PENDING_KEY } from "../auth/session";

/** The identity provider's sign-in, as /client-config offers it. */
export type OidcConfig = Extract<ClientConfig["signIn"]["methods"][number], { method: "oidc" }>;

/** Signing in, or adding the provider's account to the signed-in person's (Settings). */
export type OidcPurpose = "sign-in" | "link";

// Kept in sessionStorage only across the redirect to the provider and back, then removed:
// the PKCE verifier and state, no token.
interface Pending {
  verifier: string;
  state: string;
  next: string;
  purpose: OidcPurpose;
  /** An invite code typed on the login screen, for a new account (SIGN_UP=invite). */
  inviteCode?: string;
}

const redirectUri = () => `${location.origin}/auth/callback`;

/** Plain http only for a provider on this machine (development, tests); anywhere else, https. */
function insecureIfLoopback(config: OidcConfig) {
  const { protocol, hostname } = new URL(config.issuer);
  const loopback = hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]";
  return protocol === "http:" && loopback ? { [oauth.allowInsecureRequests]: true } : {};
}

async function discover(config: OidcConfig) {
  const issuer = new URL(config.issuer);
  const response = await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecureIfLoopback(config) });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** Extra parameters naming the API the token is for, when the deployment asks for one. */
function audienceParams(config: OidcConfig): Record<string, string> {
  if (!config.audience) return {};
  return URL.canParse(config.audience) ? { resource: config.audience } : { audience: config.audience };
}

/** Authorization Code + PKCE: off to the identity provider's own login page. */
export async function startOidcLogin(config: OidcConfig, next: string, purpose: OidcPurpose = "sign-in", inviteCode?: string) {
  const as = await discover(config);
  if (!as.authorization_endpoint) throw new Error("the identity provider has no authorization endpoint");
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set("client_id", config.clientId);
  url.searchParams.set("redirect_uri", redirectUri());
  url.searchParams.set("response_type", "code");
  url.searchParams.set("scope", config.scopes);
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set("code_challenge_method", "S256");
  url.searchParams.set("state", state);
  for (const [k, v] of Object.entries(audienceParams(config))) url.searchParams.set(k, v);
  sessionStorage.setItem(OIDC_PENDING_KEY, JSON.stringify({ verifier, state, next, purpose, ...(inviteCode ? { inviteCode } : {}) } satisfies Pending));
  location.assign(url.href);
}

/**
 * Back from the provider: trades the code for the provider's access token, which the caller
 * then trades for a session (or adds to the account); says where to go next and why.
 */
export async function finishOidcLogin(config: OidcConfig): Promise<{ accessToken: string; next: string; purpose: OidcPurpose; inviteCode?: string }> {
  const raw = sessionStorage.getItem(OIDC_PENDING_KEY);
  if (!raw) throw new Error("this login was not started here, or it already finished: log in again");
  const pending = JSON.parse(raw) as Pending;
  sessionStorage.removeItem(OIDC_PENDING_KEY);
  const as = await discover(config);
  const client: oauth.Client = { client_id: config.clientId };
  const params = oauth.validateAuthResponse(as, client, new URL(location.href), pending.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(), pending.verifier, {
    additionalParameters: audienceParams(config),
    ...insecureIfLoopback(config),
  });
  const result = await oauth.processAuthorizationCodeResponse(as, client, response);
  return { accessToken: result.access_token, next: pending.next, purpose: pending.purpose ?? "sign-in", inviteCode: pending.inviteCode };
}
