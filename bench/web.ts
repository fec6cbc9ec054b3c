// The web client: what a first visit downloads, how soon the chat is usable, and how much
// the whole path (browser, API, relay, rendering) adds to the model's own first token.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { chromiumPath, hasChromium } from "../test/e2e/support/chromium";
import { startFakeUpstream } from "../test/support/fake-upstream";
import { startServerProcess } from "../test/support/server-process";
import { buildWebIfNeeded } from "../web/scripts/build-if-needed.mjs";
import { machine, writeSection } from "./support";

const RUNS = 7;
/** Enter-to-paint swings with the shared machine's load: more samples for a steadier median. */
const TOKEN_RUNS = 21;
const dist = resolve(import.meta.dirname, "../web/dist");

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const summary = (xs: number[], digits = 1) =>
  `**${median(xs).toFixed(digits)}** (range ${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

/** Every script and stylesheet index.html loads, gzipped (level 9, as a CDN would). */
function firstLoad() {
  const html = readFileSync(resolve(dist, "index.html"), "utf8");
  const files = [...html.matchAll(/(?:src|href)="(\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  const rows = files.map((file) => {
    const bytes = readFileSync(resolve(dist, `.${file}`));
    return { file, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
  return { rows, total: rows.reduce((sum, r) => sum + r.gzip, 0), raw: rows.reduce((sum, r) => sum + r.raw, 0) };
}

async function main() {
  buildWebIfNeeded();
  const size = firstLoad();
  const kib = (n: number) => (n / 1024).toFixed(1);
  let timing = "Chromium is not installed here, so the timings were not measured (apt-get install chromium).";

  if (hasChromium) {
    const upstream = await startFakeUpstream({ record: false });
    const server = await startServerProcess({ SVC_MODEL_BASE_URL: upstream.baseUrl, RATE_LIMIT_PER_MINUTE: "0" });
    const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
    try {
      const login = await browser.newContext({ baseURL: server.url });
      const page = await login.newPage();
      await page.goto("/login");
      await page.getByLabel("Your name").fill("bench");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByRole("textbox", { name: "Message" }).waitFor();
      const storageState = await login.storageState();
      await login.close();

      // 1. Opening / (a new tab with the session, cold cache) until the composer and its
      //    model picker are usable and the credit counter shows.
      const open: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const context = await browser.newContext({ baseURL: server.url, storageState });
        const tab = await context.newPage();
        const start = performance.now();
        await tab.goto("/");
        await tab.getByRole("textbox", { name: "Message" }).waitFor();
        await tab.getByText(/credits? a message/).waitFor();
        await tab.getByRole("status", { name: /^Credits:/ }).waitFor();
        open.push(performance.now() - start);
        await context.close();
      }

      // 2. Enter pressed -> the first streamed word painted, measured inside the page;
      //    against the upstream's own time to first byte, measured by a direct client.
      const context = await browser.newContext({ baseURL: server.url, storageState });
      const tab = await context.newPage();
      await tab.goto("/");
      const composer = tab.getByRole("textbox", { name: "Message" });
      await composer.waitFor();
      const toToken: number[] = [];
      for (let i = 0; i < TOKEN_RUNS + 1; i++) {
        await tab.getByRole("link", { name: "New chat" }).click();
        const word = `probe${i}`;
        await composer.fill(word);
        await tab.evaluate(() => {
          const t: Record<string, number> = {};
          (window as unknown as { __bench: Record<string, number> }).__bench = t;
          document.addEventListener("keydown", (e) => e.key === "Enter" && (t.sent ??= performance.now()), { capture: true, once: true });
          const seen = new MutationObserver(() => {
            const replies = document.querySelectorAll('[aria-label="Assistant replied"]');
            if ([...replies].some((r) => r.textContent?.includes("echo:"))) {
              seen.disconnect();
              requestAnimationFrame(() => (t.painted = performance.now()));
            }
          });
          seen.observe(document.body, { subtree: true, childList: true, characterData: true });
        });
        await composer.press("Enter");
        await tab.waitForFunction(() => (window as unknown as { __bench: { painted?: number } }).__bench.painted !== undefined);
        const t = await tab.evaluate(() => (window as unknown as { __bench: { sent: number; painted: number } }).__bench);
        await tab.getByRole("button", { name: "Send" }).waitFor();
        if (i > 0) toToken.push(t.painted - t.sent); // the first run warms the server's paths
      }
      await context.close();

      const ttfb: number[] = [];
      for (let i = 0; i < TOKEN_RUNS; i++) {
        const start = performance.now();
        const res = await fetch(`${upstream.baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ model: "llama-3.3-70b", stream: true, messages: [{ role: "user", content: "probe" }] }),
        });
        const reader = res.body!.getReader();
        await reader.read();
        ttfb.push(performance.now() - start);
        await reader.cancel();
      }
      // The API alone, from a direct client: POST /chat/send (stream) -> its first delta event.
      const { token } = (await (
        await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"bench-api"}' })
      ).json()) as { token: string };
      const api: number[] = [];
      for (let i = 0; i < TOKEN_RUNS + 1; i++) {
        const start = performance.now();
        const res = await fetch(`${server.url}/chat/send`, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
          body: JSON.stringify({ message: `probe ${i}`, stream: true }),
        });
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        let text = "";
        while (!text.includes('"delta"')) text += (await reader.read()).value ?? "";
        if (i > 0) api.push(performance.now() - start);
        while (!(await reader.read()).done);
      }
      // 4. The navigator with 5,000 conversations: scroll from the newest to the oldest (100
      //    pages fetched on the way) while the page records every frame's duration.
      const seeded = await browser.newContext({ baseURL: server.url, storageState });
      const nav = await seeded.newPage();
      await nav.goto("/");
      const seedStart = performance.now();
      await nav.evaluate(async () => {
        const headers = { Authorization: `Bearer ${localStorage.getItem("auth.token")}`, "Content-Type": "application/json" };
        for (let i = 0; i < 5000; i += 50) {
          await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              fetch("/contexts", { method: "POST", headers, body: JSON.stringify({ name: `conversation ${String(i + j).padStart(4, "0")}` }) }),
            ),
          );
        }
      });
      const seedSeconds = (performance.now() - seedStart) / 1000;
      await nav.reload();
      const list = nav.getByRole("list", { name: "Chats" });
      await list.getByRole("link", { name: "conversation 4999" }).waitFor();
      // A string, not a function: tsx would wrap a named inner function in a helper the page lacks.
      await nav.evaluate(`(() => {
        const frames = (window.__frames = []);
        let last = performance.now();
        const tick = (now) => { frames.push(now - last); last = now; requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
      })()`);
      const scrollStart = performance.now();
      await list.hover();
      while ((await list.getByRole("link", { name: "conversation 0000" }).count()) === 0) await nav.mouse.wheel(0, 3000);
      const scrollSeconds = (performance.now() - scrollStart) / 1000;
      const frames = await nav.evaluate(() => (window as unknown as { __frames: number[] }).__frames.slice(1));
      const rowsInPage = await list.getByRole("listitem").count();
      await seeded.close();
      const sorted = [...frames].sort((a, b) => a - b);
      const p95 = sorted[Math.floor(sorted.length * 0.95)] ?? 0;
      const long = frames.filter((f) => f > 50).length;

      const added = median(toToken) - median(ttfb);
      const inBrowser = median(toToken) - median(api);
      timing = [
        `| measure (ms; ${RUNS} runs for opening, ${TOKEN_RUNS} for the others) | median (range) |`,
        "|---|---|",
        `| open \`/\` (cold cache, logged in) → composer, model picker and credit counter usable | ${summary(open, 0)} |`,
        `| press Enter → first streamed word painted in the page | ${summary(toToken)} |`,
        `| the API alone: \`POST /chat/send\` (stream) → first delta event, direct client | ${summary(api)} |`,
        `| the upstream's own time to first byte (direct streaming request) | ${summary(ttfb)} |`,
        "",
        `- Added to the upstream's first byte by the client, the API and the relay (medians): **${added.toFixed(1)} ms** (target ≤ 50 ms): ${added <= 50 ? "met" : "NOT met"}.`,
        `- Of that, the browser side (fetch, stream reading, Markdown rendering, paint) is about **${inBrowser.toFixed(1)} ms**;`,
        "  the rest is the API's own path before the model is called (authentication, the credit hold, the history)",
        "  and the relay, measured in the row above.",
        "- This figure swings with the machine's load: on the shared 2-core development machine, four runs on",
        "  2026-11-23 gave medians between 33 and 51 ms. Waiting for the next animation frame in headless",
        "  Chromium is a large and variable part of the browser side (from 8 to 45 ms in a traced run).",
        "",
        `Navigator with 5,000 conversations (seeded through the API in ${seedSeconds.toFixed(0)} s): scrolling from the newest to the oldest`,
        `took ${scrollSeconds.toFixed(1)} s, fetching all 100 pages of 50 on the way; over ${frames.length} frames the median frame`,
        `was ${median(frames).toFixed(1)} ms, the 95th percentile ${p95.toFixed(1)} ms, ${long} frame(s) over 50 ms; the list kept`,
        `${rowsInPage} rows in the page at the end (windowed), not 5,000.`,
        "",
        "- Opening is measured from Playwright's `goto` to the elements being there, so it includes",
        "  Playwright's own round trips; pressing Enter to paint is measured inside the page",
        "  (`performance.now()` at the keydown, then at the animation frame after the first word lands in the DOM).",
      ].join("\n");
    } finally {
      await browser.close();
      await server.close();
      await upstream.close();
    }
  }

  writeSection(
    "Web client",
    [
      `${machine()}; headless Chromium (Debian) on loopback, the Node server as a child process, the loopback model upstream.`,
      "",
      "What a first visit downloads (every script and stylesheet `index.html` loads; gzip level 9):",
      "",
      "| file | bytes | gzipped |",
      "|---|---:|---:|",
      ...size.rows.map((r) => `| \`${r.file}\` | ${r.raw} | ${r.gzip} |`),
      `| **total** | ${size.raw} | **${size.total} (${kib(size.total)} KiB)** |`,
      "",
      `- First load: **${kib(size.total)} KiB** gzipped (target ≤ 150 KiB): ${size.total <= 150 * 1024 ? "met" : "NOT met"}.`,
      "- Open WebUI and LibreChat were not built or measured here (their builds are not in their repositories,",
      "  and building them needs network access this machine lacks), so no like-for-like figure is given.",
      "  The only published numbers found: Open WebUI's issue #17476 (open-webui/open-webui, Sept. 2025) reports",
      "  first loads of over 10 s uncached and lists single reductions of 3.5 MB, 1.3 MB, 740 KB and 730 KB of",
      "  front-end resources (uncompressed), i.e. a first load in megabytes. For LibreChat no published figure",
      "  was found. Measure either with the browser's network panel (JS+CSS transferred on first load).",
      "",
      timing,
    ].join("\n"),
  );
  console.log(`web client: first load ${kib(size.total)} KiB gzipped`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
