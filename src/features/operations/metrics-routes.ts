import { Hono, type Context } from "hono";
import type { AppEnv } from "../../platform/deps";
import { countFailedAuthentication } from "../../platform/auth/credentials";
import { sha256Hex } from "../../platform/encoding";
import { ApiError } from "../../platform/http/errors";
import { isLoopback } from "../../platform/auth/rate-limit";

// GET /metrics: what the runtime's metrics collect, in Prometheus' text format, for the
// operator's scraper. Not in the OpenAPI document: it is the operator's, not the API's.
// Collected on the Node server only (docs/operating.md#metrics says how to have the same
// numbers on Workers); guarded by METRICS_TOKEN, or, without one, answered to this machine only.

/** GET /metrics. */
export const metricsRoutes = new Hono<AppEnv>().get("/metrics", async (c) => {
  const { metrics } = c.get("deps");
  if (!metrics.exposition) {
    throw new ApiError("not_found", "no metrics are collected here: the Worker keeps none; see docs/operating.md (Metrics) for Workers Analytics and its logs");
  }
  await requireScraper(c);
  const { contentType, body } = await metrics.exposition();
  return c.body(body, 200, { "Content-Type": contentType, "Cache-Control": "no-store" });
});

/**
 * With METRICS_TOKEN, the request must carry it as a bearer token (compared in constant
 * time; a wrong one counts as a failed authentication of its address). Without it, only a
 * loopback peer is answered (CLIENT_IP_HEADER's address behind a proxy that sets it).
 */
async function requireScraper(c: Context<AppEnv>): Promise<void> {
  const { config, clientAddress } = c.get("deps");
  const token = config.METRICS_TOKEN;
  if (token === undefined) {
    const address = clientAddress?.(c);
    if (address !== undefined && isLoopback(address)) return;
    throw new ApiError("metrics_forbidden", "the metrics are answered only to this machine while METRICS_TOKEN is unset: scrape from the server itself, or set METRICS_TOKEN and send it as a bearer token");
  }
  const sent = /^Bearer[ ]+(\S+)\s*$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  if (sent === undefined) {
    throw new ApiError("unauthenticated", "the metrics need METRICS_TOKEN: send 'Authorization: Bearer <METRICS_TOKEN>'", { headers: { "WWW-Authenticate": 'Bearer realm="metrics"' } });
  }
  if (sameSecret(sent, token)) return;
  await countFailedAuthentication(c);
  throw new ApiError("metrics_forbidden", "this is not the metrics token: send the server's METRICS_TOKEN as the bearer token");
}

/** Whether two secrets are equal, in a time that says nothing of where they differ (their digests are compared whole). */
function sameSecret(a: string, b: string): boolean {
  const x = sha256Hex(a);
  const y = sha256Hex(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x.charCodeAt(i) ^ y.charCodeAt(i);
  return diff === 0;
}
