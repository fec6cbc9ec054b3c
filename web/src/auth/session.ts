// The user's token lives in localStorage (so other tabs share it) and is sent only as an
// Authorization header, never as a cookie. Logging out removes every key this app wrote.

const TOKEN = "auth.token";
const EXPIRES = "auth.expiresAt";
const OIDC_PENDING = "auth.oidc";

export interface Session {
  token: string;
  expiresAt: number | null;
}

export function readSession(): Session | null {
  const token = localStorage.getItem(TOKEN);
  if (!token) return null;
  const raw = localStorage.getItem(EXPIRES);
  const expiresAt = raw ? Number(raw) : null;
  if (expiresAt !== null && expiresAt <= Date.now()) return null;
  return { token, expiresAt };
}

export function saveSession(token: string, expiresAt: number | null) {
  localStorage.setItem(TOKEN, token);
  if (expiresAt === null) localStorage.removeItem(EXPIRES);
  else localStorage.setItem(EXPIRES, String(expiresAt));
}

/** Forgets the token (an expired session); drafts stay so nothing typed is lost. */
export function dropSession() {
  localStorage.removeItem(TOKEN);
  localStorage.removeItem(EXPIRES);
}

/** Log out: every token and login leftover goes, in this tab's storage and the shared one. */
export function logOut() {
  dropSession();
  sessionStorage.removeItem(OIDC_PENDING);
  for (const key of Object.keys(sessionStorage)) if (key.startsWith("auth.")) sessionStorage.removeItem(key);
}

export const OIDC_PENDING_KEY = OIDC_PENDING;

/** Where to go after logging in: the page the person was on, if it is one of ours. */
export function loginPath(from: string) {
  return from && from !== "/" && !from.startsWith("/login") ? `/login?next=${encodeURIComponent(from)}` : "/login";
}
