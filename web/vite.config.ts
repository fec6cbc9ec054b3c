import preact from "@preact/preset-vite";
import { defineConfig } from "vite";
import { codeSplitting, moduleGraph } from "./vite-chunks.ts";
import { routePages } from "./vite-route-pages.ts";

// API paths the dev server hands to the real service (`npm start` on :8787 by default). Not
// /auth/callback: it is the client's own page. Start the service with
// PUBLIC_BASE_URL=http://localhost:5173, the origin the browser is on, for wallet sign-in and
// the refresh cookie's Origin check.
const API = ["/me", "/keys", "/contexts", "/groups", "/shares", "/shared", "/models", "/chat", "/credits", "/usage",
  "/audio", "/client-config", "/auth/local", "/auth/session", "/auth/refresh", "/auth/logout", "/auth/wallet",
  "/.well-known", "/health", "/openapi.json", "/v1",
  // The console's API, not the Admin area's pages beside it (/admin/people, /admin/usage-report, …).
  "^/admin/(users|plans|invites|audit|usage)(/|\\?|$)"];
const target = process.env.API_URL ?? "http://127.0.0.1:8787";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact(), moduleGraph(), routePages()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", assetsInlineLimit: 0, rolldownOptions: { output: { codeSplitting } } },
  // The Markdown worker (web/src/ui/markdown-worker.ts) loads highlight.js and KaTeX only when
  // a text needs them: a module worker, split like the page's own code.
  worker: { format: "es" },
  server: { proxy: Object.fromEntries(API.map((path) => [path, { target, changeOrigin: true }])) },
});
