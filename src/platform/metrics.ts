// ---------------------------------------------------------------------------------------
// What the service counts for an operator's monitoring: the HTTP edge and the features report
// into this interface, and the entry decides what it is. The Node server hands in one backed
// by prom-client (src/platform/node/prom-metrics.ts), which GET /metrics exposes; the Worker
// hands in none, so every report is a no-op there and prom-client stays out of its bundle.
// Nothing here knows a feature: the reports are plain names and numbers.
// ---------------------------------------------------------------------------------------

/**
 * How a charged exchange ended: stored and charged (`ok`), stopped by the person (`stopped`),
 * or refunded: the model failed (`failed`), timed out (`timeout`), refused the server's
 * credentials (`unreachable`), the client left (`cancelled`), or anything else before it was
 * stored (`refunded`).
 */
export type ExchangeOutcome = "ok" | "stopped" | "failed" | "timeout" | "unreachable" | "cancelled" | "refunded";

export interface Metrics {
  /** A request answered: its route pattern (never the raw path), method, status and seconds until the reply's head. */
  request(route: string, method: string, status: number, seconds: number): void;
  /** An exchange ended, with the model asked for. */
  exchange(model: string, outcome: ExchangeOutcome): void;
  /** A streamed reply's first token, `seconds` after the model was called. */
  firstToken(model: string, seconds: number): void;
  /** Credits charged for a stored exchange. */
  creditsSpent(model: string, credits: number): void;
  /** A model provider's call failed (`kind`: an HTTP status class, `timeout`, `network`, `credentials`). */
  upstreamError(provider: string, kind: string): void;
  /** A server-sent event stream opened (+1) or closed (-1). */
  streams(change: 1 | -1): void;
  /** A database batch (one round trip) took `seconds`. */
  databaseBatch(seconds: number): void;
  /** The metrics in Prometheus' text format; absent where nothing is collected (the Worker). */
  exposition?(): Promise<{ contentType: string; body: string }>;
}

const ignore = () => {};

/** For a runtime that collects nothing (the Worker, the tests that do not look). */
export const noMetrics: Metrics = {
  request: ignore,
  exchange: ignore,
  firstToken: ignore,
  creditsSpent: ignore,
  upstreamError: ignore,
  streams: ignore,
  databaseBatch: ignore,
};
