import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Metrics } from "../metrics";

/** Every metric's name starts with this, so that it does not meet another exporter's. */
const PREFIX = "plant_chat_";

/**
 * The Node server's metrics, kept by prom-client in a registry of their own (never the
 * library's global one) with Node's process metrics beside them: what GET /metrics answers.
 * Only the Node entry imports this file, so prom-client is not in the Worker's bundle.
 */
export function promMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: PREFIX });
  // Gauges prom-client names with a `_total` suffix, which Prometheus keeps for counters
  // (`promtool check metrics` refuses them); the same counts are not worth a lint failure.
  for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) registry.removeSingleMetric(`${PREFIX}${name}`);
  const { requests, requestSeconds, exchanges, firstToken, credits, upstreamErrors, streams, batchSeconds } = instruments(registry);
  return {
    request(route, method, status, seconds) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      requestSeconds.observe(labels, seconds);
    },
    exchange: (model, outcome) => exchanges.inc({ model, outcome }),
    firstToken: (model, seconds) => firstToken.observe({ model }, seconds),
    creditsSpent: (model, amount) => credits.inc({ model }, amount),
    upstreamError: (provider, kind) => upstreamErrors.inc({ provider, kind }),
    streams: (change) => streams.inc(change),
    databaseBatch: (seconds) => batchSeconds.observe(seconds),
    async exposition() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/** The service's own metrics, registered in `registry`. */
function instruments(registry: Registry) {
  const registers = [registry];
  const requests = new Counter({
    name: `${PREFIX}http_requests_total`,
    help: "HTTP requests answered, by route pattern (never the raw path), method and status",
    labelNames: ["route", "method", "status"] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: "Seconds from a request's arrival until its reply's head, by route pattern, method and status",
    labelNames: ["route", "method", "status"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const exchanges = new Counter({
    name: `${PREFIX}chat_exchanges_total`,
    help: "Charged chat exchanges ended, by model (the one that answered or failed) and outcome (ok, stopped, failed, timeout, unreachable, cancelled, refunded)",
    labelNames: ["model", "outcome"] as const,
    registers,
  });
  const firstToken = new Histogram({
    name: `${PREFIX}chat_time_to_first_token_seconds`,
    help: "Seconds from calling the model to its first token, for streamed replies, by the answering model",
    labelNames: ["model"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
    registers,
  });
  const credits = new Counter({
    name: `${PREFIX}chat_credits_spent_total`,
    help: "Credits charged for stored exchanges, by the answering model",
    labelNames: ["model"] as const,
    registers,
  });
  const upstreamErrors = new Counter({
    name: `${PREFIX}upstream_errors_total`,
    help: "Failed calls to model providers, by provider and kind (4xx, 5xx, timeout, network, credentials)",
    labelNames: ["provider", "kind"] as const,
    registers,
  });
  const streams = new Gauge({ name: `${PREFIX}streams_open`, help: "Server-sent event streams open now", registers });
  const batchSeconds = new Histogram({
    name: `${PREFIX}db_batch_duration_seconds`,
    help: "Seconds a database batch (one round trip) took, from the request until its results",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  return { requests, requestSeconds, exchanges, firstToken, credits, upstreamErrors, streams, batchSeconds };
}
