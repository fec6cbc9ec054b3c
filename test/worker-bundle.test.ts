// The Worker bundle exactly as `wrangler deploy` builds it (minified, with wrangler.toml's
// [alias] stand-ins from src/platform/worker/ in place of zod's locale tables and of unpdf's
// pdf.js, which is a module of its own), checked where the workerd project cannot: its
// gzipped size against the budgets in BENCHMARKS.md, and, run in workerd, its OpenAPI
// document against the one the Node server builds with all of zod, a PDF's text read
// through the separate pdf.js module, and what a brand-new isolate does at its first request.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationFiles } from "../scripts/local-d1-migrations";
import { createApp, OPENAPI_DOCUMENT } from "../src/app";
import { fileForm, pdf } from "./support/files";

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
 * the usage report) then +13.0 KiB: 753.1 KiB. Then pdf.js became a module of its own, uploaded
 * beside the bundle and imported when the first PDF arrives (wrangler.toml's
 * `find_additional_modules`): the entry module an isolate parses at its start went to 261.7 KiB
 * (BENCHMARKS.md, "Worker bundle: pdf.js on its own"). GET /metrics (a 404 on Workers) and the
 * reports the HTTP edge and the chat path make into the metrics interface, a no-op there
 * (prom-client stays out): +1.4 KiB; plans' requestsPerMinute, counted in the opening batch, +0.4 KiB (BENCHMARKS.md, "Worker bundle: metrics, plan limits, the usage rollup"). Then, as merged
 * with GET /admin/plans, names in the usage report and the audit log, ratings per model, erasure of
 * files and the daily sweep of unnamed files: 267.0 KiB for the entry, 755.7 KiB in all. The usage
 * rollups the admin's report reads (their statements in the batch that writes a usage row, the
 * erasure's and the daily job's, the report's): +2.0 KiB, 269.0 KiB and 757.8 KiB
 * (BENCHMARKS.md, "Worker bundle: metrics, plan limits, the usage rollup"). The branch each
 * process keeps (the chat history's walk, src/features/chat/branch.ts) +0.6 KiB, and a stand-in
 * for `debug`, which only file-type's zip reader imported, to log nowhere, −3.3 KiB: 267.2 KiB
 * (BENCHMARKS.md, "Worker bundle: the kept branch, and debug's stand-in"). Statements' parameters
 * filled as decided once, and a body's path written out only for a refusal: +0.3 KiB, 267.5 KiB.
 */
const ENTRY_BUDGET_KIB = 270;
/** Everything uploaded, each module gzipped on its own: the entry plus pdf.js (488.8 KiB). */
const TOTAL_BUDGET_KIB = 759;

const root = resolve(import.meta.dirname, "..");
const SECRET = "a-secret-of-at-least-32-characters!";
const dir = mkdtempSync(join(tmpdir(), "worker-bundle-"));
let mf: Miniflare | undefined;
let fresh: Miniflare | undefined;

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
  await fresh?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** The modules wrangler wrote (source maps and its README aside): their paths, the entry (worker.js) first. */
function moduleFiles(): string[] {
  const out = join(dir, "out");
  const files = readdirSync(out, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && /\.m?js$/.test(f.name));
  const entry = join(out, "worker.js");
  return [entry, ...files.map((f) => join(f.parentPath, f.name)).filter((path) => path !== entry)];
}

/** The modules wrangler wrote, by path, gzipped (-9) in KiB. */
function gzippedModules(): Map<string, number> {
  const out = join(dir, "out");
  return new Map(moduleFiles().map((path) => [relative(out, path), gzipSync(readFileSync(path), { level: 9 }).length / 1024]));
}

/**
 * The deployed bundle in a workerd of its own, as wrangler uploads it: the list of modules it
 * wrote, the entry first (pdf.js a module beside it). Given only the entry's path, Miniflare
 * parses each module to find what it imports: about 4 s of CPU for each of this file's two
 * workerds, against 0.3 s with the list.
 */
function bundleInWorkerd(bindings: Record<string, string>): Miniflare {
  const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
  return new Miniflare({
    modules: moduleFiles().map((path) => ({ type: "ESModule", path, contents: readFileSync(path) })),
    modulesRoot: join(dir, "out"),
    compatibilityDate: /compatibility_date = "([^"]+)"/.exec(wrangler)![1]!,
    compatibilityFlags: ["nodejs_compat"],
    d1Databases: ["DB"],
    r2Buckets: ["ATTACHMENTS"],
    bindings: { LOG_LEVEL: "error", ...bindings },
  });
}

/** Applies migrations/ to the Worker's D1 database. */
async function migrate(worker: Miniflare) {
  const db = await worker.getD1Database("DB");
  await db.batch(migrationFiles().flatMap((m) => m.statements.map((s) => db.prepare(s))));
  return db;
}

describe("the deployed Worker bundle", () => {
  it(`has an entry module of at most ${ENTRY_BUDGET_KIB} KiB gzipped, and pdf.js apart from it`, () => {
    // Measured as bench/worker.ts reports it: gzip -9 of the worker.js wrangler emits.
    const modules = gzippedModules();
    expect([...modules.keys()].sort()).toEqual(["platform/worker/pdfjs-module.mjs", "worker.js"]);
    expect(modules.get("worker.js")).toBeLessThanOrEqual(ENTRY_BUDGET_KIB);
    expect(readFileSync(join(dir, "out", "worker.js"), "utf8")).toContain('import("./platform/worker/pdfjs-module.mjs")');
  });

  it(`is at most ${TOTAL_BUDGET_KIB} KiB gzipped in all`, () => {
    const total = [...gzippedModules().values()].reduce((a, b) => a + b, 0);
    expect(total).toBeLessThanOrEqual(TOTAL_BUDGET_KIB);
  });

  it("serves the same OpenAPI document as the Node server", async () => {
    mf = bundleInWorkerd({ AUTH_HS256_SECRET: SECRET, AUTH_AUDIENCE: "plant-chat-test" });
    const res = await mf.dispatchFetch("http://worker.test/openapi.json");
    expect(res.status).toBe(200);
    const served = await res.json();
    const node = createApp(() => {
      throw new Error("the document needs no dependencies");
    }).getOpenAPI31Document(OPENAPI_DOCUMENT);
    expect(served).toEqual(JSON.parse(JSON.stringify(node)));
  }, 30_000);

  it("reads a PDF's text through pdf.js, loaded as its own module when the first PDF arrives", async () => {
    await migrate(mf!);
    const token = await new SignJWT({ name: "pdf" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("user:pdf")
      .setAudience("plant-chat-test")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET));
    // Miniflare's fetch takes bytes, not this process's FormData: the multipart body, encoded.
    const form = new Request("http://form.invalid", { method: "POST", body: fileForm(pdf(["Water the fern on Sundays."]), "fern.pdf") });
    const res = await mf!.dispatchFetch("http://worker.test/attachments", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": form.headers.get("content-type")! },
      body: new Uint8Array(await form.arrayBuffer()),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await res.json()).toMatchObject({ type: "application/pdf", kind: "document", pages: 1, chars: 26 });
  }, 30_000);

  // Ended stays ended in the Worker: a session another isolate ended and a sign-in method
  // another isolate removed are rows in D1, which an isolate that never saw them reads before
  // its first request with a token. (test/worker/ended.test.ts covers the isolate that ends
  // them; its files share one isolate, so the new one is made here.)
  it("in a new isolate, refuses at its first request a session another isolate ended and a sign-in method another removed", async () => {
    const idp = await generateKeyPair("ES256", { extractable: true });
    const sessionKey = { ...(await exportJWK((await generateKeyPair("ES256", { extractable: true })).privateKey)), kid: "bundle-test-session" };
    const issuer = "https://idp.test/";
    fresh = bundleInWorkerd({
      AUTH_PUBLIC_KEY: JSON.stringify({ ...(await exportJWK(idp.publicKey)), alg: "ES256" }),
      AUTH_ISSUER: issuer,
      AUTH_AUDIENCE: "plant-chat-bundle-test",
      SESSION_SIGNING_KEY: JSON.stringify(sessionKey),
    });
    const db = await migrate(fresh);
    const now = Date.now();
    // What the isolate that ended the session wrote beside deleting it.
    await db
      .prepare("insert into ended_sessions (session_id, user_id, reason, ended_at, tokens_expire_at) values (?, ?, 'signed-out', ?, ?)")
      .bind("ses_elsewhere_000000000000", "usr_elsewhere_0000000000", now, now + 15 * 60_000 + 5000)
      .run();
    // What removing the identity that made an account leaves: its row, with no account.
    await db
      .prepare("insert into identities (id, user_id, issuer, subject, own_id, label, created_at) values ('idn_removed_00000000000000', null, ?, 'user:removed-elsewhere', 1, 'x', ?)")
      .bind(issuer, now)
      .run();

    // An access token of that session, signed with the Worker's own session key, as POST /auth/session issues them.
    const sessionToken = await new SignJWT({ sid: "ses_elsewhere_000000000000", method: "wallet" })
      .setProtectedHeader({ alg: "ES256", kid: sessionKey.kid, typ: "at+jwt" })
      .setIssuer("https://worker.test")
      .setAudience("https://worker.test")
      .setSubject("usr_elsewhere_0000000000")
      .setIssuedAt()
      .setExpirationTime("15m")
      .sign(sessionKey);
    const ended = await fresh.dispatchFetch("https://worker.test/me", { headers: { Authorization: `Bearer ${sessionToken}` } });
    expect(ended.status).toBe(401);
    expect(((await ended.json()) as { message: string }).message).toMatch(/session has ended/);

    const idpToken = await new SignJWT({ name: "removed-elsewhere" })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer(issuer)
      .setAudience("plant-chat-bundle-test")
      .setSubject("user:removed-elsewhere")
      .setExpirationTime("10m")
      .sign(idp.privateKey);
    const removed = await fresh.dispatchFetch("https://worker.test/plants", { headers: { Authorization: `Bearer ${idpToken}` } });
    expect(removed.status).toBe(401);
    expect(((await removed.json()) as { message: string }).message).toMatch(/removed from its account/);
  }, 30_000);
});
