import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// API paths the dev server hands to the real service (`npm start` on :8787 by default).
const API = ["/me", "/keys", "/contexts", "/groups", "/shares", "/shared", "/models", "/chat", "/credits", "/usage",
  "/audio", "/client-config", "/auth/local", "/health", "/openapi.json", "/v1"];
const target = process.env.API_URL ?? "http://127.0.0.1:8787";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", assetsInlineLimit: 0 },
  server: { proxy: Object.fromEntries(API.map((path) => [path, { target, changeOrigin: true }])) },
});
