import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      DB: D1Database;
      TEST_MIGRATIONS: D1Migration[];
      TEST_PRIVATE_JWK: string;
      AUTH_ISSUER: string;
      AUTH_AUDIENCE: string;
      /** The loopback upstream (test/worker/global-setup.ts). */
      SVC_MODEL_BASE_URL: string;
      SESSION_SIGNING_KEY: string;
      /** Attachments' bytes in miniflare's local R2 (wrangler.toml). */
      ATTACHMENTS: R2Bucket;
    }
    interface GlobalProps {
      mainModule: typeof import("../../src/worker");
    }
  }
}
