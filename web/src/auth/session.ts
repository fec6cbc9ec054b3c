// The session lives in this page's memory only. Its access token is never written to
// localStorage or sessionStorage (a script injected into the page could read those): it is
// renewed through the refresh cookie, which is HttpOnly (no script reads it), SameSite=Strict
// and sent only to /auth. A reload restores the session from that cookie (POST
// /auth/refresh); the token is renewed shortly before it expires and after a 401, and the
// request is retried once. Refreshes of every tab of this origin take turns (Web Locks): the
// refresh token is replaced at each one, and two refreshes racing with the same token could
// end the session as if it had been stolen. (A refresh cut off by a reload is answered again:
// the server gives a replaced token one more use within 30 s, docs/api.md.)
//
// A cookie the page can read, `signed_in`, says a refresh cookie may be there: set with each
// session this page takes, removed when it ends. Without it (a first visit, after signing
// out) the page does not ask POST /auth/refresh, which could only fail: the visitor is
// welcomed by the login screen, not told that a session ended, and the console stays clean.
//
// On a page load the first refresh is asked by /theme.js (web/public/theme.js), the page's
// first script, with the same lock, while this code is still on its way; refreshSession
// takes its answer.

export interface AccountSummary {
  id: string;
  name: string;
  avatarUrl: string | null;
}

/** What POST /auth/session and POST /auth/refresh answer. */
export interface SessionReply {
  accessToken: string;
  expiresAt: string;
  user: AccountSummary;
}

export interface Session {
  token: string;
  expiresAt: number;
  /** When to renew it: a minute before it expires, or at 80% of a shorter lifetime. */
  renewAt: number;
  user: AccountSummary;
}

let current: Session | null = null;
let renewal: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<Session | null> | undefined;
/** Why a session is gone: the person signed out (here or in another tab), or it ended on the server. */
export type EndReason = "signed-out" | "ended";
const listeners = new Set<(session: Session | null, reason?: EndReason) => void>();

/** Other tabs hear of a sign-out here (a message without any token), and sign out too. */
const channel = typeof BroadcastChannel === "function" ? new BroadcastChannel("session") : undefined;
channel?.addEventListener("message", (event) => {
  if (event.data === "signed-out") setSession(null, "signed-out");
});

/** The readable cookie beside the refresh cookie; it holds no secret, only that there may be a session. */
const MARKER = "signed_in";

function markSignedIn(on: boolean) {
  const secure = location.protocol === "https:" ? "; Secure" : "";
  // 400 days, the longest a browser keeps a cookie; the session itself ends sooner unused,
  // and a refresh then says so ("Your session ended") and removes this.
  // biome-ignore lint/suspicious/noDocumentCookie: a marker cookie the server reads; the Cookie Store API is not in every browser.
  document.cookie = `${MARKER}=${on ? "1" : ""}; Path=/; Max-Age=${on ? 400 * 86_400 : 0}; SameSite=Strict${secure}`;
}

/** Whether this browser may hold a session to restore (it took one and has not ended it). */
export function mayHaveSession(): boolean {
  return document.cookie.split(/;\s*/).includes(`${MARKER}=1`);
}

// Earlier versions of the client kept the token in localStorage: none of it may stay behind.
for (const key of ["auth.token", "auth.expiresAt"]) localStorage.removeItem(key);

export function currentSession(): Session | null {
  return current;
}

/** Calls `listener` with the session whenever it changes (signed in, renewed, ended); returns the unsubscribe. */
export function onSessionChange(listener: (session: Session | null, reason?: EndReason) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Why the last session here ended, for a page that started listening after it did. */
let lastEnd: EndReason | undefined;
export const lastEndReason = () => lastEnd;

/**
 * The last refresh could not be answered (offline, or the server's 5xx): a session may well
 * be there, but this page does not know it. Not the same as none: the page says so and offers
 * to try again, rather than sending the person to sign in during an outage.
 */
let unreachable = false;
export const lastRefreshUnreachable = () => unreachable;

function setSession(session: Session | null, reason?: EndReason) {
  current = session;
  lastEnd = session ? undefined : reason;
  markSignedIn(session !== null);
  clearTimeout(renewal);
  // A 401 renews it too, should the timer not have run (a sleeping laptop, a throttled tab).
  if (session) renewal = setTimeout(() => void refreshSession(), Math.max(0, session.renewAt - Date.now()));
  for (const listener of listeners) listener(session, session ? undefined : reason);
}

/** Takes the session a sign-in answered. */
export function adoptSession(reply: SessionReply): Session {
  const expiresAt = Date.parse(reply.expiresAt);
  const left = expiresAt - Date.now();
  const session = { token: reply.accessToken, expiresAt, renewAt: expiresAt - Math.min(60_000, left * 0.2), user: reply.user };
  setSession(session);
  return session;
}

/**
 * A new access token from the refresh cookie, or null when there is no session to renew (never
 * signed in here, signed out, ended from another device). Concurrent calls share one request,
 * and tabs take turns.
 */
export function refreshSession(): Promise<Session | null> {
  const early = takeEarlyRefresh();
  // Nothing to renew: never signed in in this browser, or signed out (here or in another tab).
  if (!current && !mayHaveSession() && !early) return Promise.resolve(null);
  if (refreshing) return refreshing;
  unreachable = false;
  refreshing = (early ?? withRefreshLock(askRefresh))
    .then(({ status, body }) => {
      if (body) return adoptSession(body);
      // A server that cannot answer now (5xx, offline) has not ended the session: keep what we have.
      if (status >= 500) {
        unreachable = true;
        return current;
      }
      setSession(null, "ended");
      return null;
    })
    .catch(() => {
      // The network: try again later, on the next request.
      unreachable = true;
      return current;
    })
    .finally(() => (refreshing = undefined));
  return refreshing;
}

/** POST /auth/refresh's status, and its reply when it gave a session. */
interface RefreshAnswer {
  status: number;
  body?: SessionReply;
}

async function askRefresh(): Promise<RefreshAnswer> {
  const response = await fetch("/auth/refresh", { method: "POST", headers: { Accept: "application/json" } });
  return response.ok ? { status: response.status, body: (await response.json()) as SessionReply } : { status: response.status };
}

declare global {
  interface Window {
    /** The refresh /theme.js asked for as the page loaded (web/public/theme.js), until taken. */
    __sessionRefresh?: Promise<RefreshAnswer>;
  }
}

/** The refresh /theme.js began before this code arrived, once: the first caller gets it. */
function takeEarlyRefresh(): Promise<RefreshAnswer> | undefined {
  const early = window.__sessionRefresh;
  delete window.__sessionRefresh;
  return early;
}

function withRefreshLock<T>(work: () => Promise<T>): Promise<T> {
  return navigator.locks ? (navigator.locks.request("session-refresh", work) as Promise<T>) : work();
}

/** Signs out on the server (ends the session, clears the cookie), here and in the other tabs. */
export async function signOut(): Promise<void> {
  setSession(null, "signed-out");
  channel?.postMessage("signed-out");
  await fetch("/auth/logout", { method: "POST" }).catch(() => {});
  // What a sign-in through the identity provider may have left, should it not have finished.
  for (const key of Object.keys(sessionStorage)) if (key.startsWith("auth.")) sessionStorage.removeItem(key);
}

/** The session ended on the server (a 401 that refreshing did not cure). */
export function sessionEnded() {
  if (current) setSession(null, "ended");
}

/** The access token to send, renewed first when it is due (the renewal timer may not have run). */
export async function freshToken(): Promise<string | null> {
  const session = current;
  if (!session) return null;
  if (Date.now() < session.renewAt) return session.token;
  return (await refreshSession())?.token ?? null;
}

/** Where to go after signing in: the page the person was on, if it is one of ours. */
export function loginPath(from: string) {
  return from && from !== "/" && !from.startsWith("/login") ? `/login?next=${encodeURIComponent(from)}` : "/login";
}

/** Where the identity provider's redirect keeps its PKCE state until it comes back (then removed). */
export const OIDC_PENDING_KEY = "auth.oidc";
