// The Worker bundle exactly as `wrangler deploy` builds it (minified, with wrangler.toml's
// [alias] stand-in from src/platform/worker/ in place of zod's locale tables), checked where the workerd
// project cannot: its gzipped size against the budget in BENCHMARKS.md, and, run in workerd,
// its OpenAPI document against the one the Node server builds with all of zod.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, OPENAPI_DOCUMENT } from "../src/app";

/**
 * Deployed Workers start faster the smaller they are; the bundle stays under this (gzip -9).
 * It was 150 KiB (146.5 measured) until three capabilities came, measured as each was merged
 * (BENCHMARKS.md, "Worker bundle"): models as configuration (the MODELS schema, providers'
 * model lists, tools, JSON replies and images on /v1) 9.9 KiB; conversation trees
 * (regenerate, edit, instructions, presets, export and import) 10.7 KiB; sign-in sessions
 * (Sign-In with Ethereum, rotating refresh tokens, devices, linked methods) 20.7 KiB; and
 * zod's compiler and JSON Schema code, unused but no longer left out by stand-ins for zod's
 * private files, 14.1 KiB: 201.9 KiB. Then 203.9 KiB on main at d7b24d2, and 208.5 KiB with what
 * opening the service to the public takes (sessions that stay ended, the sign-up policy and its
 * limits, Turnstile, audience binding), +4.6 KiB: BENCHMARKS.md, "Worker bundle: being safe to open";
 * and 210.8 KiB with the chat path's changes merged beside it (+2.2 KiB: titles' configuration,
 * usage kinds and tokens, the token-budgeted history, one list of error codes); 215.6 KiB with
 * replies in the background (+4.8 KiB: the running reply, following and stopping it, ratings);
 * 218.6 KiB with maintained libraries where hand-written code was (+3.0 KiB: quick-lru for the
 * bounded caches 1.3 KiB, oauth4webapi's discovery 1.7 KiB). Attachments then brought pdf.js
 * (unpdf's serverless build: a PDF's text, extracted in the Worker) and the file-type sniffer:
 * 740.1 KiB as merged, +521 KiB, nearly all of it pdf.js (BENCHMARKS.md, "Worker bundle: attachments"). Wrangler
 * inlines a package's dynamic import, so it is parsed at an isolate's start even when no PDF comes.
 * The operator's console (admins, suspension, plans, grants, invites, keys with limits, erasure,
 * the usage report) then +13.0 KiB: 753.1 KiB. GET /metrics (a 404 on Workers) and the reports
 * the HTTP edge and the chat path make into the metrics interface, a no-op there (prom-client
 * stays out): +1.4 KiB, 754.5 KiB; plans' requestsPerMinute, counted in the opening batch, +0.4 KiB: 754.9 KiB;
 * the usage rollups the admin's report reads, +1.9 KiB: 756.8 KiB
 * (BENCHMARKS.md, "Worker bundle: metrics, plan limits, the usage rollup").
 */
const BUDGET_KIB = 757;

const root = resolve(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "worker-bundle-"));
let mf: Miniflare | undefined;

beforeAll(() => {
  // An empty assets directory stands in for web/dist, which the bundle does not contain.
  mkdirSync(join(dir, "assets"));
  execFileSync(
    process.execPath,
    [join(root, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", join(dir, "out"), "--assets", join(dir, "assets")],
    { cwd: root, stdio: "pipe", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("the deployed Worker bundle", () => {
  it(`is at most ${BUDGET_KIB} KiB gzipped`, () => {
    // Measured as bench/worker.ts reports it: gzip -9 of the worker.js wrangler emits.
    const gzipped = gzipSync(readFileSync(join(dir, "out", "worker.js")), { level: 9 }).length;
    expect(gzipped / 1024).toBeLessThanOrEqual(BUDGET_KIB);
  });

  it("serves the same OpenAPI document as the Node server", async () => {
    const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
    mf = new Miniflare({
      modules: true,
      scriptPath: join(dir, "out", "worker.js"),
      modulesRoot: join(dir, "out"),
      compatibilityDate: /compatibility_date = "([^"]+)"/.exec(wrangler)![1]!,
      compatibilityFlags: ["nodejs_compat"],
      d1Databases: ["DB"],
      bindings: { AUTH_HS256_SECRET: "a-secret-of-at-least-32-characters!", AUTH_AUDIENCE: "plant-chat-test", LOG_LEVEL: "error" },
    });
    const res = await mf.dispatchFetch("http://worker.test/openapi.json");
    expect(res.status).toBe(200);
    const served = await res.json();
    const node = createApp(() => {
      throw new Error("the document needs no dependencies");
    }).getOpenAPI31Document(OPENAPI_DOCUMENT);
    expect(served).toEqual(JSON.parse(JSON.stringify(node)));
  }, 30_000);
});
