import type { Preferences } from "../api/client";

export type Theme = Preferences["theme"];

const media = () => window.matchMedia("(prefers-color-scheme: dark)");

/** Applies a theme now and keeps the copy /theme.js reads before the next first paint. */
export function applyTheme(theme: Theme) {
  try {
    localStorage.setItem("theme", theme);
  } catch {
    // Storage disabled: the theme still applies to this page.
  }
  document.documentElement.dataset.theme = theme === "auto" ? (media().matches ? "dark" : "light") : theme;
}
