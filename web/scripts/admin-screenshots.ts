// The Admin area's screens and the suspended page, light and dark, for npm run screenshots:
// a server with a few people, two priced models and a month of usage, run first with open
// sign-up (the people come), then again over the same database with SIGN_UP=invite (the
// invites, two of them used).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { chromium, type Browser } from "playwright-core";
import { LOCAL_ISSUER } from "../../src/platform/auth/local-login";
import { userIdFor } from "../../src/platform/auth/identity";
import { chromiumPath } from "../../test/e2e/support/chromium";
import { startFakeUpstream, type FakeUpstream } from "../../test/support/fake-upstream";
import { startServerProcess, type ServerProcess } from "../../test/support/server-process";

const PEOPLE = ["Bob Okafor", "Chen Wei", "Dana Petrova", "Emeka Nwosu", "Farah Haddad", "Grace Lindqvist"];
const PLANS = [
  { id: "free", name: "Free", dailyCredits: 200, models: "*", default: true },
  { id: "team", name: "Team", dailyCredits: 2000, models: "*", maxApiKeys: 50 },
  { id: "research", name: "Research", dailyCredits: 10000, models: ["svc-70b"] },
];

function serverEnv(upstream: FakeUpstream, admin: string, signUp: "open" | "invite"): Record<string, string> {
  const models = [
    { id: "svc-70b", name: "Service 70B", protocol: "openai", baseUrl: upstream.baseUrl, default: true, inputPricePerMillion: 0.59, outputPricePerMillion: 0.79 },
    { id: "fast-8b", name: "Fast 8B", protocol: "openai", baseUrl: upstream.baseUrl, upstream: "fast-8b", inputPricePerMillion: 0.05, outputPricePerMillion: 0.08 },
    { id: "vision-90b", name: "Vision 90B", protocol: "openai", baseUrl: upstream.baseUrl, upstream: "vision", images: true, credits: 3, inputPricePerMillion: 0.9, outputPricePerMillion: 1.2 },
  ];
  return {
    MODELS: JSON.stringify(models),
    PLANS: JSON.stringify(PLANS),
    ADMINS: admin,
    SIGN_UP: signUp,
    TITLES: "off",
    RATE_LIMIT_PER_MINUTE: "0",
    SIGN_UPS_PER_ADDRESS_PER_HOUR: "0",
    SIGN_INS_PER_ADDRESS_PER_MINUTE: "0",
    SIGN_INS_PER_IDENTITY_PER_MINUTE: "0",
  };
}

/** A session access token for a local name (an invite code for a new account where sign-up is by invite). */
async function sessionToken(server: ServerProcess, name: string, inviteCode?: string): Promise<string> {
  const res = await fetch(`${server.url}/auth/session`, {
    method: "POST",
    // A browser's, for the list of signed-in devices ("Safari on macOS").
    headers: { "Content-Type": "application/json", "User-Agent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15" },
    body: JSON.stringify({ local: { name }, ...(inviteCode ? { inviteCode } : {}) }),
  });
  if (!res.ok) throw new Error(`POST /auth/session for ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

function caller(server: ServerProcess, token: string) {
  return async (path: string, body?: unknown, method = body === undefined ? "GET" : "POST") => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : ((await res.json()) as Record<string, unknown>);
  };
}

/** A month of usage rows of every person on the three models (tokens, failures, time to first token), and their days' credits. */
async function seedUsage(databaseUrl: string, ids: string[]) {
  const db = createClient({ url: databaseUrl });
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const models = [
    ["svc-70b", 1],
    ["fast-8b", 1],
    ["vision-90b", 3],
  ] as const;
  let n = 0;
  for (let d = 1; d < 30; d++) {
    const day = today - d * 86_400_000;
    for (const [u, id] of ids.entries()) {
      const count = Math.max(0, Math.round((6 - u) * (1.2 + Math.sin(d / 3 + u)) + (d % 7 === 0 ? -4 : 0)));
      let used = 0;
      for (let i = 0; i < count; i++) {
        const [model, credits] = models[(i + u + d) % (u % 2 === 0 ? 3 : 2)]!;
        const failed = (i + d + u) % 23 === 0;
        used += failed ? 0 : credits;
        await db.execute({
          sql: "INSERT INTO usage_events (id, user_id, at, model, credits, kind, input_tokens, output_tokens, tokens_estimated, first_token_ms, outcome) VALUES (?, ?, ?, ?, ?, 'message', ?, ?, 0, ?, ?)",
          args: [`use_seed${n++}`, id, day + 3_600_000 * (8 + (i % 12)), model, failed ? 0 : credits, 900 + 37 * i + 11 * d, failed ? 0 : 350 + 23 * i, 300 + ((i * 97 + d * 31) % 900), failed ? "failed" : "ok"],
        });
      }
      if (used > 0) await db.execute({ sql: "INSERT INTO credit_days (user_id, day, used) VALUES (?, ?, ?)", args: [id, new Date(day).toISOString().slice(0, 10), used] });
    }
  }
  db.close();
}

/** The people, their messages and API keys; their ids, in PEOPLE's order. */
async function seedPeople(server: ServerProcess): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, name] of PEOPLE.entries()) {
    const call = caller(server, await sessionToken(server, name));
    ids.push(((await call("/me")) as { id: string }).id);
    for (let m = 0; m <= i % 3; m++) await call("/chat/send", { message: `Question ${m + 1} from ${name}`, model: m === 1 ? "fast-8b" : "svc-70b" });
    if (i < 2) await call("/keys", { name: "laptop script", dailyCreditLimit: 100, models: ["svc-70b"] });
  }
  return ids;
}

/** What the admin did: a grant, a plan, a suspension, invites (two of them used). */
async function adminActions(server: ServerProcess, ids: string[]) {
  const admin = caller(server, await sessionToken(server, "Alice"));
  const [bob, chen, , , , grace] = ids;
  await admin(`/admin/users/${bob}/credits`, { amount: 1000, note: "Conference demo next week" });
  await admin(`/admin/users/${chen}/plan`, { plan: "team" }, "PUT");
  await admin(`/admin/users/${grace}/suspend`, { reason: "Automated sign-ups posting spam links" });
  const invite = (await admin("/admin/invites", { uses: 5, plan: "team", note: "Design team" })) as { code: string };
  for (const name of ["Hana Sato", "Ivan Horvat"]) await sessionToken(server, name, invite.code);
  await admin("/admin/invites", { uses: 1, expiresAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), note: "For the press" });
}

/** Deletes the invites with this note. */
async function deleteInvites(server: ServerProcess, note: string) {
  const admin = caller(server, await sessionToken(server, "Alice"));
  const { items } = (await admin("/admin/invites")) as { items: Array<{ id: string; note: string | null }> };
  for (const invite of items.filter((i) => i.note === note)) await admin(`/admin/invites/${invite.id}`, undefined, "DELETE");
}

async function shootAdmin(browser: Browser, server: ServerProcess, out: string, bobId: string) {
  for (const theme of ["light", "dark"] as const) {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
    const page = await context.newPage();
    const shoot = async (name: string) => {
      await page.mouse.move(1270, 10);
      await page.screenshot({ path: join(out, `${name}-${theme}.png`) });
    };
    await page.goto("/login");
    await page.getByLabel("Your name").fill("Alice");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: "Admin" }).click();
    await page.getByRole("link", { name: "Grace Lindqvist" }).waitFor();
    await shoot("admin-people");
    // The person's page and the report whole: a taller window.
    await page.setViewportSize({ width: 1280, height: 1720 });
    await page.goto(`/admin/people/${bobId}`);
    await page.getByRole("list", { name: "Credits used per day" }).waitFor();
    await shoot("admin-person");
    await page.setViewportSize({ width: 1280, height: 2200 });
    await page.goto("/admin/usage-report");
    await page.getByRole("list", { name: "Cost per model" }).waitFor();
    await shoot("admin-usage");
    await page.setViewportSize({ width: 1280, height: 1240 });
    // The invite made on this page, not the one the other theme's pass made.
    await deleteInvites(server, "Spring workshop");
    await page.goto("/admin/invite-codes");
    await page.getByRole("spinbutton", { name: "Uses" }).fill("10");
    await page.getByRole("textbox", { name: "Note (what it is for)" }).fill("Spring workshop");
    await page.getByRole("button", { name: "Create invite" }).click();
    await page.getByRole("textbox", { name: "New invite code" }).waitFor();
    await shoot("admin-invites");
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto("/admin/audit-log");
    await page.getByRole("cell", { name: "created an invite" }).first().waitFor();
    await shoot("admin-audit");
    await context.close();

    const phone = await browser.newContext({ baseURL: server.url, viewport: { width: 375, height: 812 }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
    const mobile = await phone.newPage();
    await mobile.goto("/login");
    await mobile.getByLabel("Your name").fill("Alice");
    await mobile.getByRole("button", { name: "Log in" }).click();
    await mobile.getByRole("textbox", { name: "Message" }).waitFor();
    await mobile.goto(`/admin/people/${bobId}`);
    await mobile.getByRole("heading", { name: "Bob Okafor" }).waitFor();
    await mobile.screenshot({ path: join(out, `phone-admin-person-${theme}.png`) });
    await phone.close();
  }
}

/** What Grace sees: she signs in and is told her account is suspended, and why. */
async function shootSuspended(browser: Browser, server: ServerProcess, out: string) {
  for (const theme of ["light", "dark"] as const) {
    const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByLabel("Your name").fill("Grace Lindqvist");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "Your account is suspended" }).waitFor();
    await page.screenshot({ path: join(out, `suspended-${theme}.png`) });
    await context.close();
  }
}

export async function adminScreens(out: string) {
  const upstream = await startFakeUpstream({ record: false });
  upstream.reply = () => "Bright, indirect light and water when the top few centimetres of soil are dry.";
  const aliceId = await userIdFor(LOCAL_ISSUER, "local:Alice");
  // A folder of our own: the second start serves from the first one's database and keys.
  const dataDir = mkdtempSync(join(tmpdir(), "admin-screenshots-"));
  let server = await startServerProcess(serverEnv(upstream, aliceId, "open"), { dataDir });
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  try {
    const alice = caller(server, await sessionToken(server, "Alice"));
    await alice("/chat/send", { message: "Hello" });
    const ids = await seedPeople(server);
    await server.close();
    // While no server holds the database: a month of usage.
    await seedUsage(server.databaseUrl, [aliceId, ...ids]);
    // Again over the same database, where a new account needs an invite.
    server = await startServerProcess(serverEnv(upstream, aliceId, "invite"), { dataDir });
    await adminActions(server, ids);
    const bob = ids[0]!;
    await shootAdmin(browser, server, out, bob);
    await shootSuspended(browser, server, out);
  } finally {
    await browser.close();
    await server.close();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
