import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { exportJWK, generateKeyPair } from "jose";
import { defineConfig } from "vitest/config";

// The real Worker (src/worker.ts via wrangler.toml) in workerd, over a local D1 database
// migrated from migrations/. The identity provider is an ES256 key made for this run: the
// Worker trusts its public half, the tests sign with the private half.
const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });

export default defineConfig({
  plugins: [
    cloudflareTest(async ({ inject }) => ({
      wrangler: { configPath: fileURLToPath(new URL("../../wrangler.toml", import.meta.url)) },
      miniflare: {
        bindings: {
          AUTH_PUBLIC_KEY: JSON.stringify({ ...(await exportJWK(publicKey)), alg: "ES256" }),
          AUTH_ISSUER: "https://idp.test/",
          AUTH_AUDIENCE: "plant-chat-worker-test",
          LOG_LEVEL: "error",
          SVC_MODEL_BASE_URL: inject("upstreamUrl"),
          DAILY_CREDITS: "3",
          TEST_PRIVATE_JWK: JSON.stringify(await exportJWK(privateKey)),
          TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL("../../migrations", import.meta.url))),
        },
      },
    })),
  ],
  test: {
    name: "workerd",
    include: ["./**/*.test.ts"],
    setupFiles: ["./apply-migrations.ts"],
    globalSetup: ["./global-setup.ts"],
  },
});
