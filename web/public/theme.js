// Runs synchronously in <head>, before the first paint, so the page never flashes the wrong
// theme. The app keeps a copy of the profile's theme preference in localStorage("theme").
(() => {
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
