import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { inject } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "../../support/fake-upstream";
import { startServerProcess, type ServerProcess } from "../../support/server-process";
import { testBrowserArgs, testBrowserPath } from "./chromium";
import type { OidcProvider } from "./oidc-provider";

/** The avatar host the stack allows (AVATAR_HOSTS), as the OpenID provider's pictures name it. */
export const AVATAR_HOST = "avatars.example.test";
const AVATAR_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGPgrU0GIgYIBQAYogO1l9eaDgAAAABJRU5ErkJggg==",
  "base64",
);

export interface Stack {
  /** The app's origin, e.g. http://localhost:41234. */
  url: string;
  upstream: FakeUpstream;
  server: ServerProcess;
  oidc?: OidcProvider;
  /** The worker's Chromium (workerBrowser), which this stack's contexts are made in. */
  browser: Browser;
  /**
   * A fresh browser profile (no storage) whose requests stay on loopback. It asks for reduced
   * motion unless `motion` says otherwise: see newContext below.
   */
  newContext(options?: { width?: number; height?: number; colorScheme?: "light" | "dark"; motion?: "reduce" | "no-preference" }): Promise<BrowserContext>;
  close(): Promise<void>;
}

let launched: Promise<Browser> | undefined;
/**
 * The worker's headless Chromium, launched at its first stack and kept for the files the
 * worker runs after it (they share modules: vitest.config.ts); each stack works in contexts of
 * its own, which share nothing, and closes them. Launched here, Playwright's server runs in
 * this process beside its client. One Chromium for the run, in vitest's own process with a
 * WebSocket to each worker, cost more: the browser project took 239 s and its vitest
 * processes 74 CPU-s, against 210 s and 56 CPU-s this way (2 cores, one run each).
 */
function workerBrowser(): Promise<Browser> {
  launched ??= chromium.launch({ executablePath: testBrowserPath, headless: true, args: testBrowserArgs(inject("fakeAudioFile")) });
  return launched;
}

/**
 * The real Node server as a child process over a fresh libSQL file, the loopback upstream
 * (chat and transcription), optionally a real OpenID provider, and a connection to the
 * project's headless Chromium.
 */
export async function startStack(
  options: {
    dailyCredits?: number;
    oidc?: boolean;
    transcription?: boolean;
    /** More variables for the server; a function gets the upstream (to point providers at it). */
    env?: Record<string, string> | ((upstream: FakeUpstream) => Record<string, string>);
    /** A data folder an earlier server used (its database and keys), which `close` then leaves in place. */
    dataDir?: string;
  } = {},
): Promise<Stack> {
  const upstream = await startFakeUpstream();
  // Imported only when wanted: the package warns about the Node version as it loads.
  const oidc = options.oidc ? await (await import("./oidc-provider")).startOidcProvider() : undefined;
  const server = await startServerProcess({
    SVC_MODEL_BASE_URL: upstream.baseUrl,
    ...(options.transcription === false ? {} : { STT_BASE_URL: upstream.baseUrl }),
    DAILY_CREDITS: String(options.dailyCredits ?? 500),
    RATE_LIMIT_PER_MINUTE: "0",
    // One browser makes every account and sign-in of a file, all from 127.0.0.1.
    SIGN_UPS_PER_ADDRESS_PER_HOUR: "0",
    SIGN_INS_PER_ADDRESS_PER_MINUTE: "0",
    SIGN_INS_PER_IDENTITY_PER_MINUTE: "0",
    ...(oidc ? { AUTH_OIDC_ISSUER: oidc.issuer, AUTH_OIDC_CLIENT_ID: oidc.clientId, AUTH_OIDC_AUDIENCE: oidc.audience } : {}),
    // The provider's pictures (its `picture` claims) come from this host, answered below.
    AVATAR_HOSTS: `https://${AVATAR_HOST}`,
    // Another build of the client, e.g. an earlier commit's, to see a new test fail before its fix.
    ...(process.env.E2E_WEB_DIST ? { WEB_DIST_DIR: process.env.E2E_WEB_DIST } : {}),
    ...(typeof options.env === "function" ? options.env(upstream) : options.env),
  }, { dataDir: options.dataDir });
  oidc?.configure(server.url);
  const browser = await workerBrowser();
  const contexts = new Set<BrowserContext>();
  return {
    url: server.url,
    upstream,
    server,
    oidc,
    browser,
    async newContext({ width = 1280, height = 800, colorScheme = "light", motion = "reduce" } = {}) {
      // Reduced motion, as a person may ask of their system: the client's animations (a
      // spinner, the dots of a reply being written) then stand still, and Chromium does not
      // paint a frame of them 60 times a second while a test waits. Four of the longest files
      // took 8% less CPU (139 and 130 CPU-s against 128 and 120). What moves, and for whom,
      // is tested on its own (chat-details.test.ts, the dots of a reply being written).
      const context = await browser.newContext({ baseURL: server.url, viewport: { width, height }, colorScheme, reducedMotion: motion });
      contexts.add(context);
      // Stands in for the identity provider's picture host: a 2x2 PNG for any path. Only
      // where there is a provider: a route makes Playwright see every request of the
      // context and turns off its HTTP cache. (Other hosts do not resolve: chromium.ts's testBrowserArgs.)
      if (oidc) await context.route(`https://${AVATAR_HOST}/**`, (route) => route.fulfill({ contentType: "image/png", body: AVATAR_PNG }));
      await context.grantPermissions(["microphone", "clipboard-read", "clipboard-write"], { origin: server.url });
      return context;
    },
    async close() {
      // Closes this stack's contexts; the browser serves the worker's other files.
      await Promise.all([...contexts].map((c) => c.close()));
      await server.close();
      await oidc?.close();
      await upstream.close();
    },
  };
}

/**
 * An access token for the person named `name` (local login), from a session of its own, as
 * another device of theirs would hold: for the API calls a test makes beside the browser
 * (whose own token lives only in the page's memory).
 */
export async function apiToken(stack: Pick<Stack, "url">, name: string): Promise<string> {
  const res = await fetch(`${stack.url}/auth/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ local: { name } }) });
  if (!res.ok) throw new Error(`POST /auth/session answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

/** Logs in on the local login screen with a name, and waits for the chat. */
export async function logInOnScreen(page: Page, name: string) {
  await page.goto("/");
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("textbox", { name: "Message" }).waitFor();
}

/**
 * Opens the chat signed in as `name` (local login), as a returning person's browser does: the
 * session is taken through the page's own request API, whose cookies are the page's (the
 * HttpOnly refresh cookie; `signed_in` beside it, which the client sets with each session it
 * takes), and the page restores it from them as after a reload. For the tests where signing
 * in is a precondition; the login screen has tests of its own (login.test.ts, first-visit,
 * accessibility, logInOnScreen). Without the screen a sign-in costs Chromium about 590 ms of
 * CPU instead of 750 (20 in a row, measured): about 100 of them run in the browser project.
 * With `path`, the first page opened is that one, not the chat.
 */
export async function logInLocally(page: Page, name: string, path?: string) {
  const res = await page.request.post("/auth/session", { data: { local: { name } } });
  if (!res.ok()) throw new Error(`POST /auth/session answered ${res.status()}: ${await res.text()}`);
  await page.context().addCookies([{ name: "signed_in", value: "1", url: new URL(res.url()).origin, sameSite: "Strict" }]);
  // `path`: the page opens there (a deep link), and the caller waits for what it shows.
  if (path) return void (await page.goto(path));
  await page.goto("/");
  await page.getByRole("textbox", { name: "Message" }).waitFor();
}

/** Sends a message from the composer with Enter and waits until `reply` is on screen and done. */
export async function sendAndWait(page: Page, text: string, reply = `echo: ${text}`) {
  const composer = page.getByRole("textbox", { name: "Message" });
  await composer.fill(text);
  await composer.press("Enter");
  await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: reply }).last().waitFor();
  await page.getByRole("button", { name: "Send" }).waitFor();
}

/**
 * Resolves after the page has drawn twice more: what its scripts did with what they already
 * had (a response just read, a module just loaded) is then on screen. An event to wait on,
 * not a length of time.
 */
export async function afterNextPaint(page: Page) {
  await page.evaluate(() => new Promise<void>((done) => requestAnimationFrame(() => requestAnimationFrame(() => done()))));
}

/** Polls until `check` returns true (the browser updates asynchronously); fails with `what`. */
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Whatever about a session sits in the page's storage (tokens, refresh tokens, login
 * leftovers): the keys that hold any. The session lives in memory and an HttpOnly cookie, so
 * none may.
 */
export async function sessionTraces(page: Page): Promise<string[]> {
  const stored = await page.evaluate(() => [...Object.entries(localStorage), ...Object.entries(sessionStorage)]);
  return stored.filter(([key, value]) => /auth|token|session/i.test(key) || /eyJ|rt_|Bearer/.test(value)).map(([key]) => key);
}
