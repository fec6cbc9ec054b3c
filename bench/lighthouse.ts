// Lighthouse (its mobile preset: a mid-range phone's CPU, slow 4G, simulated; every file
// fetched afresh) on the pages people open: login, the chat with a conversation holding
// code, a table and math, Settings, and the public share page. Several runs a page; the
// median is what BENCHMARKS.md records. `npm run bench -- lighthouse`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import lighthouse, { type Config } from "lighthouse";
import { chromium } from "playwright-core";
import { chromiumPath, hasChromium } from "../test/e2e/support/chromium";
import { startFakeUpstream } from "../test/support/fake-upstream";
import { startServerProcess } from "../test/support/server-process";
import { buildWebIfNeeded } from "../web/scripts/build-if-needed.mjs";
import { RICH_REPLIES } from "./lighthouse-content";
import { cpuTimeArtifacts } from "./lighthouse-cpu-time";
import { lanternSummary } from "./lighthouse-lantern";
import { machine, median, writeSection } from "./support";

const RUNS = Number(process.env.LIGHTHOUSE_RUNS ?? 3);
/** A folder to keep each run's full report (JSON, for Lighthouse's viewer), its trace (for DevTools' Performance panel) and what Lighthouse's simulation made of it (.lantern.txt), and the same of its audit from CPU time (.cpu.*), when set. */
const REPORTS = process.env.LIGHTHOUSE_REPORTS;
/** Only the pages whose names start with one of these (comma-separated), while working on one; BENCHMARKS.md is then left alone. */
const ONLY = process.env.LIGHTHOUSE_ONLY?.split(",").filter(Boolean);
/** Set (to anything): the traces carry V8's samples too, the JavaScript each task ran (costs some speed: not for the recorded figures). */
const PROFILE = !!process.env.LIGHTHOUSE_PROFILE;
/** Another build of the web client to measure (an earlier commit's, or one built with `--minify false` to read a profile by). */
const WEB_DIST = process.env.LIGHTHOUSE_WEB_DIST;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Score {
  performance: number;
  tbt: number;
  lcp: number;
  fcp: number;
  bestPractices: number;
  /** Lighthouse's performance score and total blocking time with each task taking its CPU time (bench/lighthouse-cpu-time.ts). */
  cpuPerformance: number;
  cpuTbt: number;
}

const CONFIG: Config = {
  extends: "lighthouse:default",
  settings: {
    // Its check navigates away and back: the page, loaded again, renews its session, and the
    // check moves on before the answer (and its new refresh cookie) arrives; the next run then
    // sends a refresh token already used, which ends the session. It weighs nothing in the score.
    skipAudits: ["bf-cache"],
    ...(PROFILE ? { additionalTraceCategories: "disabled-by-default-v8.cpu_profiler" } : {}),
  },
};

/** One Lighthouse run of `url`, then the same run audited again from CPU time. */
async function audit(url: string, port: number, name: string): Promise<Score> {
  // The run's artifacts (trace, network log), kept for the second audit (Lighthouse's -GA).
  const saved = mkdtempSync(join(tmpdir(), "lighthouse-run-"));
  try {
    const flags = { port, output: "json" as const, logLevel: "error" as const, onlyCategories: ["performance", "best-practices"], gatherMode: saved, auditMode: saved };
    const result = await lighthouse(url, flags, CONFIG);
    if (!result) throw new Error(`Lighthouse gave no result for ${url}`);
    const { lhr } = result;
    const base = REPORTS && join(REPORTS, `${name.split(",")[0]!.replace(/\W+/g, "-")}-${Date.now()}`);
    if (base) {
      mkdirSync(REPORTS!, { recursive: true });
      writeFileSync(`${base}.json`, JSON.stringify(lhr));
      writeFileSync(`${base}.trace.json`, JSON.stringify(result.artifacts.Trace));
      writeFileSync(`${base}.lantern.txt`, lanternSummary());
    }
    if (lhr.runtimeError) throw new Error(`Lighthouse failed on ${url}: ${lhr.runtimeError.message}`);
    cpuTimeArtifacts(saved, `${saved}-cpu`);
    const cpu = await lighthouse(undefined, { ...flags, gatherMode: false, auditMode: `${saved}-cpu` }, CONFIG);
    if (!cpu || cpu.lhr.runtimeError) throw new Error(`Lighthouse could not audit ${url} again from CPU time: ${cpu?.lhr.runtimeError?.message}`);
    if (base) {
      writeFileSync(`${base}.cpu.json`, JSON.stringify(cpu.lhr));
      writeFileSync(`${base}.cpu.lantern.txt`, lanternSummary());
    }
    const ms = (report: typeof lhr, id: string) => Math.round(report.audits[id]?.numericValue ?? NaN);
    const score = (report: typeof lhr, id: string) => Math.round((report.categories[id]?.score ?? 0) * 100);
    return {
      performance: score(lhr, "performance"),
      bestPractices: score(lhr, "best-practices"),
      tbt: ms(lhr, "total-blocking-time"),
      lcp: ms(lhr, "largest-contentful-paint"),
      fcp: ms(lhr, "first-contentful-paint"),
      cpuPerformance: score(cpu.lhr, "performance"),
      cpuTbt: ms(cpu.lhr, "total-blocking-time"),
    };
  } finally {
    rmSync(saved, { recursive: true, force: true });
    rmSync(`${saved}-cpu`, { recursive: true, force: true });
  }
}

async function main() {
  if (!hasChromium) {
    writeSection("Lighthouse", "Chromium is not installed here, so Lighthouse did not run (apt-get install chromium).");
    return;
  }
  // Read now: the load average at the start, not once the runs have added their own.
  const startedOn = machine();
  buildWebIfNeeded();
  const upstream = await startFakeUpstream({ record: false });
  const server = await startServerProcess({ SVC_MODEL_BASE_URL: upstream.baseUrl, RATE_LIMIT_PER_MINUTE: "0", ...(WEB_DIST ? { WEB_DIST_DIR: WEB_DIST } : {}) });
  const profile = mkdtempSync(join(tmpdir(), "lighthouse-profile-"));
  const port = await freePort();
  // Lighthouse drives this browser over its debugging port, in the default profile, where the
  // login below leaves the session's cookie (Lighthouse clears the cache, not cookies).
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", `--remote-debugging-port=${port}`],
  });
  const pages: Array<{ name: string; path: string; scores: Score[] }> = [];
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const measure = async (name: string, path: string) => {
      if (ONLY && !ONLY.some((prefix) => name.startsWith(prefix))) return;
      const scores: Score[] = [];
      for (let i = 0; i < RUNS; i++) scores.push(await audit(`${server.url}${path}`, port, name));
      pages.push({ name, path, scores });
      console.log(`${name}: ${scores.map((s) => `${s.performance} (TBT ${s.tbt} ms, LCP ${s.lcp} ms; from CPU time ${s.cpuPerformance}, TBT ${s.cpuTbt} ms)`).join(", ")}`);
    };

    // A first visit: nobody signed in yet.
    await measure("login", "/login");

    // The conversation, made through the API by the person the browser then signs in as.
    const name = "lighthouse";
    const session = await fetch(`${server.url}/auth/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ local: { name } }) });
    const { accessToken } = (await session.json()) as { accessToken: string };
    const headers = { Authorization: `Bearer ${accessToken}`, "Content-Type": "application/json" };
    let contextId: string | undefined;
    for (const [question, answer] of RICH_REPLIES) {
      upstream.reply = () => answer!;
      const res = await fetch(`${server.url}/chat/send`, { method: "POST", headers, body: JSON.stringify({ message: question, ...(contextId ? { contextId } : {}) }) });
      if (!res.ok) throw new Error(`POST /chat/send answered ${res.status}: ${await res.text()}`);
      contextId = ((await res.json()) as { contextId: string }).contextId;
    }
    const share = await fetch(`${server.url}/contexts/${contextId}/share`, { method: "POST", headers, body: "{}" });
    const shareUrl = new URL(((await share.json()) as { url: string }).url);

    await page.goto(`${server.url}/login`);
    await page.getByLabel("Your name").fill(name);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.goto("about:blank");

    await measure("chat, a conversation with code, a table and math", `/c/${contextId}`);
    await measure("settings", "/settings");
    await measure("share page", shareUrl.pathname);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
    await server.close();
    await upstream.close();
  }

  if (ONLY) return;
  const mid = (scores: Score[], key: keyof Score) => median(scores.map((s) => s[key]));
  const range = (scores: Score[], key: keyof Score) => `${Math.min(...scores.map((s) => s[key]))}–${Math.max(...scores.map((s) => s[key]))}`;
  const rows = pages.map(
    ({ name, path, scores }) =>
      `| ${name} (\`${path.replace(/\/(c|s)\/[^/]+$/, "/$1/…")}\`) | **${mid(scores, "performance")}** (${range(scores, "performance")}) | **${mid(scores, "tbt")}** (${range(scores, "tbt")}) | ${mid(scores, "fcp")} | ${mid(scores, "lcp")} | ${mid(scores, "cpuPerformance")} (${range(scores, "cpuPerformance")}) | ${mid(scores, "cpuTbt")} (${range(scores, "cpuTbt")}) | ${mid(scores, "bestPractices")} |`,
  );
  writeSection(
    "Lighthouse",
    `${startedOn}. Lighthouse ${(await import("lighthouse/package.json", { with: { type: "json" } })).default.version}, mobile preset (simulated slow 4G and a 4× slower CPU), cold cache (Lighthouse clears it before each run; the session's cookie stays), against the Node server (\`npm start\`'s build) over loopback, in Debian's Chromium, headless. The median of ${RUNS} runs a page (the range in brackets). The chat page opens a conversation of three exchanges: a table, two highlighted code blocks (Python, JavaScript) and display and inline math.

| page | performance | total blocking time, ms | first contentful paint, ms | largest contentful paint, ms | performance from CPU time | total blocking time from CPU time, ms | best practices |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

The columns "from CPU time" are Lighthouse's audit of the same run again, each task of the page's main thread as long as the CPU time it got (bench/lighthouse-cpu-time.ts): what the page would score were the machine its own. \`npm run bench -- lighthouse\` (\`LIGHTHOUSE_RUNS=5\` for more runs a page).`,
  );
}

await main();
