import { spawnSync } from "node:child_process";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/expect-error";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { startIdentityProvider, type IdentityProvider } from "./support/identity-provider";
import { startServerProcess, type ServerProcess } from "./support/server-process";

// GET /metrics on the real Node server (dist/server.js, as `npm start` runs it): real chat
// traffic against an upstream on loopback, then the scrape, checked by Prometheus' own
// promtool and by the values the traffic must have left.

/** This machine's address on a network (not loopback), when it has one. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

let idp: IdentityProvider;
let up: FakeUpstream;
beforeAll(async () => {
  [idp, up] = await Promise.all([startIdentityProvider(), startFakeUpstream()]);
});
afterAll(async () => {
  await Promise.all([idp.close(), up.close()]);
});

/** The server's variables: this test's identity provider and upstream; no titles, whose model calls would count too. */
const serverEnv = (extra: Record<string, string> = {}) => ({
  AUTH_JWKS_URL: idp.jwksUrl,
  AUTH_ISSUER: idp.issuer,
  AUTH_AUDIENCE: idp.audience,
  SVC_MODEL_BASE_URL: up.baseUrl,
  TITLES: "off",
  ...extra,
});

/** One sample of the exposition: a metric's name, its labels and its value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample of `name` with (at least) these labels; 0 when there is none, as Prometheus reads an absent counter. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

/** `promtool check metrics` over the text, as Prometheus' tooling lints an exporter. */
function promtool(text: string): { status: number | null; output: string } {
  const run = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  if (run.error) throw new Error(`this check runs promtool: install Debian's prometheus package (apt-get install prometheus) (${run.error.message})`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe("GET /metrics after real traffic", () => {
  let server: ServerProcess;
  let base: string;
  let token: string;
  beforeAll(async () => {
    server = await startServerProcess(serverEnv({ HOST: "0.0.0.0", CLIENT_IP_HEADER: "X-Real-IP" }));
    base = server.url.replace("localhost", "127.0.0.1");
    token = await idp.sign("user:metrics-ada", { name: "ada" });
  }, 60_000);
  afterAll(() => server.close());

  const send = (body: Record<string, unknown>) =>
    fetch(`${base}/chat/send`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const scrape = async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    return res.text();
  };

  it("counts requests by route, exchanges, first tokens, credits, upstream errors, streams and batches, and passes promtool", { timeout: 60_000 }, async () => {
    up.mode = "ok";
    for (const message of ["one", "two"]) expect((await send({ message })).status).toBe(200);
    const streamed = await send({ message: "three", stream: true });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("event: done");
    up.mode = "fail";
    await expectError(await send({ message: "four" }), 502, /failed/, "model_failed");
    up.mode = "ok";
    const unknown = await fetch(`${base}/contexts/ctx_not-there`, { headers: { Authorization: `Bearer ${token}` } });
    expect(unknown.status).toBe(404);
    expect((await fetch(`${base}/no/such/endpoint`, { headers: { Accept: "application/json" } })).status).toBe(404);

    // A reply still streaming is an open stream.
    up.holds = () => true;
    const held = await send({ message: "five", stream: true });
    const reader = held.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain("data:");
    const during = parseExposition(await scrape());
    expect(sampleValue(during, "plant_chat_streams_open")).toBe(1);
    up.holds = undefined;
    up.releaseHeld();
    while (!(await reader.read()).done);

    const text = await scrape();
    const lint = promtool(text);
    expect(lint, lint.output).toEqual({ status: 0, output: "" });

    const m = parseExposition(text);
    const requests = (route: string, method: string, status: number) => sampleValue(m, "plant_chat_http_requests_total", { route, method, status: String(status) });
    expect(requests("/chat/send", "POST", 200)).toBe(4);
    expect(requests("/chat/send", "POST", 502)).toBe(1);
    // The route's pattern, never the path with its id.
    expect(requests("/contexts/:id", "GET", 404)).toBe(1);
    expect(requests("(none)", "GET", 404)).toBe(1);
    expect(m.some((s) => s.labels.route?.includes("ctx_not-there") || s.labels.route?.includes("/no/such"))).toBe(false);
    // The scrape during the stream, counted once it was answered.
    expect(requests("/metrics", "GET", 200)).toBe(1);
    expect(sampleValue(m, "plant_chat_http_request_duration_seconds_count", { route: "/chat/send", method: "POST", status: "200" })).toBe(4);
    expect(sampleValue(m, "plant_chat_http_request_duration_seconds_bucket", { route: "/chat/send", method: "POST", status: "200", le: "+Inf" })).toBe(4);

    expect(sampleValue(m, "plant_chat_chat_exchanges_total", { model: "svc-70b", outcome: "ok" })).toBe(4);
    expect(sampleValue(m, "plant_chat_chat_exchanges_total", { model: "svc-70b", outcome: "failed" })).toBe(1);
    expect(sampleValue(m, "plant_chat_chat_credits_spent_total", { model: "svc-70b" })).toBe(4);
    // Streamed replies only: a whole reply has no first token to time.
    expect(sampleValue(m, "plant_chat_chat_time_to_first_token_seconds_count", { model: "svc-70b" })).toBe(2);
    expect(sampleValue(m, "plant_chat_upstream_errors_total", { provider: "svc", kind: "5xx" })).toBe(1);
    expect(sampleValue(m, "plant_chat_streams_open")).toBe(0);
    // Each message: its opening batch and the batch that stores (or refunds) it, and more.
    expect(sampleValue(m, "plant_chat_db_batch_duration_seconds_count")).toBeGreaterThanOrEqual(10);
    // Node's own process metrics beside them.
    expect(sampleValue(m, "plant_chat_process_start_time_seconds")).toBeGreaterThan(0);
  });

  it("answers only this machine while METRICS_TOKEN is unset: not an address a proxy names, nor another machine's", async () => {
    const forwarded = await fetch(`${base}/metrics`, { headers: { "X-Real-IP": "203.0.113.9" } });
    await expectError(forwarded, 403, /only to this machine/, "metrics_forbidden");
    if (lanAddress) {
      const port = new URL(base).port;
      await expectError(await fetch(`http://${lanAddress}:${port}/metrics`), 403, /METRICS_TOKEN/, "metrics_forbidden");
    }
  });
});

describe("GET /metrics with METRICS_TOKEN", () => {
  const METRICS_TOKEN = "scrape-me-0123456789abcdef";
  let server: ServerProcess;
  let base: string;
  beforeAll(async () => {
    server = await startServerProcess(serverEnv({ METRICS_TOKEN }));
    base = server.url.replace("localhost", "127.0.0.1");
  }, 60_000);
  afterAll(() => server.close());

  it("asks for the token (401), refuses another (403), and answers with it, from any address", async () => {
    const none = await fetch(`${base}/metrics`);
    await expectError(none, 401, /METRICS_TOKEN/, "unauthenticated");
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    const wrong = await fetch(`${base}/metrics`, { headers: { Authorization: "Bearer scrape-me-0123456789abcdeX" } });
    await expectError(wrong, 403, /not the metrics token/, "metrics_forbidden");
    // A user's access token is not the metrics token either.
    const user = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${await idp.sign("user:metrics-bob")}` } });
    await expectError(user, 403, /not the metrics token/, "metrics_forbidden");
    const right = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("# TYPE plant_chat_http_requests_total counter");
  });
});
