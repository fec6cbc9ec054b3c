// The page's first script, run synchronously in <head> before the first paint (external
// because the CSP forbids inline script). It applies the saved theme, so the page never
// flashes the wrong one, and starts restoring the session, so that the answer comes in
// while the app's code does rather than after it (web/src/auth/session.ts takes it).
(() => {
  // The app keeps a copy of the profile's theme preference in localStorage("theme").
  var saved = null;
  try { saved = localStorage.getItem("theme"); } catch { /* storage disabled */ }
  var choice = saved === "light" || saved === "dark" ? saved : "auto";
  var media = window.matchMedia("(prefers-color-scheme: dark)");
  var apply = () => {
    var now = null;
    try { now = localStorage.getItem("theme"); } catch { /* storage disabled */ }
    var c = now === "light" || now === "dark" ? now : "auto";
    document.documentElement.dataset.theme = c === "auto" ? (media.matches ? "dark" : "light") : c;
  };
  document.documentElement.dataset.theme = choice === "auto" ? (media.matches ? "dark" : "light") : choice;
  media.addEventListener("change", apply);
})();

(() => {
  // POST /auth/refresh, as session.ts's refreshSession asks it (taking the same Web Lock, so
  // that tabs still take turns), when the page will need a session: the signed-in app's
  // addresses, in a browser whose signed_in cookie says it may have one. Not the login
  // screen, the share page or the sign-in callback.
  var path = location.pathname;
  if (!/(?:^|;\s*)signed_in=1(?:;|$)/.test(document.cookie)) return;
  if (path === "/login" || path === "/auth/callback" || path.startsWith("/s/")) return;
  var ask = () =>
    fetch("/auth/refresh", { method: "POST", headers: { Accept: "application/json" } }).then((response) =>
      response.ok ? response.json().then((body) => ({ status: response.status, body: body })) : { status: response.status },
    );
  var answer = navigator.locks ? navigator.locks.request("session-refresh", ask) : ask();
  // A network failure is the app's to retry; here it must not be an unhandled rejection.
  answer.catch(() => {});
  window.__sessionRefresh = answer;
})();
