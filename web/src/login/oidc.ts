import * as oauth from "oauth4webapi";
import type { ClientConfig } from "../api/client-config";
import { OIDC_PENDING_KEY, saveSession } from "../auth/session";

type OidcConfig = Extract<ClientConfig["auth"], { mode: "oidc" }>;

interface Pending {
  verifier: string;
  state: string;
  next: string;
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
export async function startOidcLogin(config: OidcConfig, next: string) {
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
  sessionStorage.setItem(OIDC_PENDING_KEY, JSON.stringify({ verifier, state, next } satisfies Pending));
  location.assign(url.href);
}

/** Back from the provider: trade the code for an access token; returns where to go next. */
export async function finishOidcLogin(config: OidcConfig): Promise<string> {
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
  const expiresAt = typeof result.expires_in === "number" ? Date.now() + result.expires_in * 1000 : null;
  saveSession(result.access_token, expiresAt);
  return pending.next;
}
