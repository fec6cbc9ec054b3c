import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { exportJWK, generateKeyPair } from "jose";
import { defineConfig } from "vitest/config";
import { experimental_readRawConfig } from "wrangler";

// The real Worker (src/worker.ts via wrangler.toml) in workerd, over a local D1 database
// migrated from migrations/. The identity provider is an ES256 key made for this run: the
// Worker trusts its public half, the tests sign with the private half.
const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
// The Worker's session signing key (SESSION_SIGNING_KEY, a secret in production).
const sessionKey = (await generateKeyPair("ES256", { extractable: true })).privateKey;

// A tiny build of the web client in place of web/dist (which `npm run build:web` makes and a
// fresh clone lacks), served through wrangler.toml's [assets] settings and ASSETS binding.
const webDist = mkdtempSync(join(tmpdir(), "worker-web-dist-"));
mkdirSync(join(webDist, "assets"));
writeFileSync(join(webDist, "index.html"), '<!doctype html><html><head><script src="/theme.js"></script></head><body><div id="app"></div></body></html>');
writeFileSync(join(webDist, "theme.js"), "document.documentElement.dataset.theme = 'light';");
writeFileSync(join(webDist, "assets", "index-abc123.js"), "console.log('app');");
// One of the copies of index.html for a kind of page (web/vite-route-pages.ts); the others fall back to index.html.
mkdirSync(join(webDist, "pages"));
writeFileSync(join(webDist, "pages", "share.html"), '<!doctype html><html><head><title>share page</title></head><body><div id="app"></div></body></html>');

// The deployed bundle's stand-in for zod's locale tables (wrangler.toml [alias], src/platform/worker/), which
// this pool does not take from wrangler.toml: the Worker under test runs the code that ships.
// Wrangler matches an alias's key exactly, so each becomes an exact-match pattern here.
const configPath = fileURLToPath(new URL("../../wrangler.toml", import.meta.url));
const aliases: Record<string, string> = experimental_readRawConfig({ config: configPath }).rawConfig.alias ?? {};
const bundleAliases = Object.entries(aliases).map(([key, path]) => ({
  find: new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`),
  replacement: path.startsWith(".") ? fileURLToPath(new URL(`../../${path}`, import.meta.url)) : path,
}));

export default defineConfig({
  resolve: { alias: bundleAliases },
  plugins: [
    cloudflareTest(async ({ inject }) => ({
      wrangler: { configPath },
      miniflare: {
        assets: { directory: webDist },
        bindings: {
          AUTH_PUBLIC_KEY: JSON.stringify({ ...(await exportJWK(publicKey)), alg: "ES256" }),
          AUTH_ISSUER: "https://idp.test/",
          AUTH_AUDIENCE: "plant-chat-worker-test",
          LOG_LEVEL: process.env.WORKER_LOG_LEVEL ?? "error",
          SVC_MODEL_BASE_URL: inject("upstreamUrl"),
          DAILY_CREDITS: "3",
          // The operator's console (test/worker/admin.test.ts): an admin by verified e-mail,
          // and plans whose default is the allowance above, so the other files see no change.
          ADMINS: "boss@worker.test",
          PLANS: JSON.stringify([
            { id: "default", name: "Default", dailyCredits: 3, models: "*", default: true },
            { id: "grants-only", name: "Grants only", dailyCredits: 0, models: "*" },
            { id: "elsewhere", name: "Elsewhere", dailyCredits: 10, models: ["gpt-4o"] },
            // test/worker/plans-rate.test.ts; with it, every file's messages run the opening batch that counts calls.
            { id: "limited", name: "Limited", dailyCredits: 3, models: "*", requestsPerMinute: 2 },
          ]),
          TEST_PRIVATE_JWK: JSON.stringify(await exportJWK(privateKey)),
          SESSION_SIGNING_KEY: JSON.stringify({ ...(await exportJWK(sessionKey)), kid: "worker-test-session" }),
          TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL("../../migrations", import.meta.url))),
        },
      },
    })),
  ],
  test: {
    name: "workerd",
    // One file that imports the others: the project stays in one worker (workerd.test.ts).
    include: ["./workerd.test.ts"],
    setupFiles: ["./apply-migrations.ts"],
    // As the Node project's: vitest's 5 s default is too short for a test of several requests
    // through workerd on a 2-core machine running the other projects beside it.
    testTimeout: 20_000,
    // One workerd (and one D1 database) per worker for all its files, not one per file: half
    // the project's CPU (44 s -> 22 s). Each test signs in users of its own.
    isolate: false,
    globalSetup: ["./global-setup.ts"],
  },
});
