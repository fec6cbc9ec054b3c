import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userIdFor } from "../../src/platform/auth/identity";
import { LOCAL_ISSUER } from "../../src/platform/auth/local-login";
import { startServerProcess } from "../support/server-process";
import { seriousViolations } from "./support/axe";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

// The web client's Admin area, walked by an admin in Chromium against the real server where
// sign-up is by invite: People (search, a person's page: suspend with a reason, unsuspend,
// grant, plan, keys and sessions, erase), Usage (charts with axes, top users, CSV), Invites
// (a code shown once, who used it, delete) and Audit; a person who is no admin, who has no
// entry and is told "not available"; and a suspended person, who is told so.

const PLANS = [
  { id: "free", name: "Free", dailyCredits: 50, models: "*", default: true },
  { id: "team", name: "Team", dailyCredits: 5000, models: "*" },
];
// Ada is the admin (ADMINS names her account id); the others were made while sign-up was open.
const PEOPLE = ["Ada", "Bruno", "Cleo", "Zed", "Dina"];

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;

/** A call to the API as `name` (a session of its own, like another device of theirs). */
async function as(stack: Stack, name: string) {
  const token = await apiToken(stack, name);
  return (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${stack.url}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
}

/** The People list's row of `name`. */
const personRow = (page: Page, name: string) => page.getByRole("table").getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });

describe.skipIf(!hasChromium)("the Admin area", () => {
  let stack: Stack;
  let dataDir: string;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    // The accounts first, while anyone may sign up; then the service again, by invite only.
    dataDir = mkdtempSync(join(tmpdir(), "admin-e2e-"));
    const open = await startServerProcess({ SIGN_UPS_PER_ADDRESS_PER_HOUR: "0", SIGN_INS_PER_ADDRESS_PER_MINUTE: "0", SIGN_INS_PER_IDENTITY_PER_MINUTE: "0" }, { dataDir });
    for (const name of PEOPLE) {
      const res = await fetch(`${open.url}/auth/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ local: { name } }) });
      expect(res.status).toBe(200);
      ids[name] = (await json<{ user: { id: string } }>(res)).user.id;
    }
    await open.close();
    expect(ids.Ada).toBe(await userIdFor(LOCAL_ISSUER, "local:Ada"));
    stack = await startStack({
      dataDir,
      env: (up) => ({
        SIGN_UP: "invite",
        ADMINS: ids.Ada!,
        PLANS: JSON.stringify(PLANS),
        MODELS: JSON.stringify([{ id: "svc-70b", name: "Service 70B", protocol: "openai", baseUrl: up.baseUrl, default: true, inputPricePerMillion: 1000, outputPricePerMillion: 2000 }]),
      }),
    });
    // Bruno chats and keeps a limited key; Dina chats too.
    const bruno = await as(stack, "Bruno");
    expect((await bruno("/chat/send", { body: { message: "hello from Bruno" } })).status).toBe(200);
    expect((await bruno("/keys", { body: { name: "cron job", dailyCreditLimit: 40 } })).status).toBe(201);
    expect((await (await as(stack, "Dina"))("/chat/send", { body: { message: "hi" } })).status).toBe(200);
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Ada, signed in, on the People list by way of the navigator's Admin entry. */
  async function adminPage(options: { width?: number; colorScheme?: "light" | "dark" } = {}) {
    const context = await stack.newContext(options);
    const page = await context.newPage();
    await logInLocally(page, "Ada");
    if ((options.width ?? 1280) <= 768) await page.getByRole("button", { name: "Open conversations" }).click();
    await page.getByRole("navigation", { name: "Conversations" }).getByRole("link", { name: "Admin" }).click();
    await page.getByRole("heading", { name: "Admin", level: 1 }).waitFor();
    await personRow(page, "Bruno").waitFor();
    return { context, page };
  }

  it("lets an admin find a person, suspend them with a reason, lift it, grant credits and change their plan", async () => {
    const { context, page } = await adminPage();
    expect(new URL(page.url()).pathname).toBe("/admin");
    expect(await personRow(page, "Dina").getByRole("cell").allTextContents()).toEqual(["Name", "Free", "Active", "1", "0", "1", expect.any(String)]);

    await page.getByRole("searchbox", { name: "Search", exact: true }).fill("brU");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await eventually("only Bruno listed", async () => (await page.getByRole("table").getByRole("link").allTextContents()).join() === "Bruno");
    expect(page.url()).toMatch(/\/admin\/people\?q=brU$/);
    await page.getByRole("link", { name: "Bruno", exact: true }).click();
    await page.getByRole("heading", { name: "Bruno", level: 2 }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/admin/people/${ids.Bruno}`);
    // His key with its limit, his devices, his month of credits.
    expect(await page.getByRole("table").first().getByRole("row").nth(1).textContent()).toMatch(/cron job.*40 credits/);
    await page.getByRole("region", { name: "Signed-in devices table" }).waitFor();
    expect(await page.getByRole("list", { name: "Credits used per day" }).getByRole("listitem").count()).toBe(30);

    // Suspended with a reason: his tokens are refused at once, with it.
    let bruno = await as(stack, "Bruno");
    await page.getByRole("textbox", { name: "Reason (they are told it)" }).fill("Posting spam links");
    await page.getByRole("button", { name: "Suspend", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Suspended: their sessions ended" }).waitFor();
    await page.getByText("Suspended: Posting spam links").waitFor();
    expect(await json(bruno("/credits"))).toMatchObject({ code: "account_suspended", message: expect.stringContaining("Posting spam links") });
    await page.getByRole("button", { name: "Unsuspend", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "The suspension is lifted" }).waitFor();
    // His sessions ended with the suspension; signing in again works.
    bruno = await as(stack, "Bruno");
    expect((await bruno("/credits")).status).toBe(200);

    await page.getByRole("spinbutton", { name: "Amount" }).fill("250");
    await page.getByRole("textbox", { name: "Note (for the audit log)" }).fill("Workshop");
    await page.getByRole("button", { name: "Grant credits" }).click();
    await page.getByRole("status").filter({ hasText: "Granted 250 credits." }).waitFor();
    await page.getByText("granted credits left").locator("..").getByText("250").waitFor();

    await page.getByRole("combobox", { name: "Plan" }).selectOption({ label: "Team (5000 a day)" });
    await page.getByRole("button", { name: "Change plan" }).click();
    await page.getByRole("status").filter({ hasText: "Now on the Team plan." }).waitFor();
    await page.getByText("Team plan", { exact: true }).waitFor();
    expect(await json(bruno("/credits"))).toMatchObject({ granted: 250, allowance: 5000, plan: { id: "team" } });

    // Back to the list as it was (the search is in the address), then by status and plan.
    await page.getByRole("link", { name: "← All people" }).click();
    await page.goBack();
    await page.goBack();
    await eventually("the search kept", async () => (await page.getByRole("searchbox", { name: "Search", exact: true }).inputValue()) === "brU");
    await page.goto("/admin/people");
    await page.getByRole("combobox", { name: "Plan" }).selectOption({ label: "Team" });
    await eventually("only Bruno on Team", async () => (await page.getByRole("table").getByRole("link").allTextContents()).join() === "Bruno");
    await context.close();
  });

  it("erases an account only once its id is typed", async () => {
    const { context, page } = await adminPage();
    await page.getByRole("link", { name: "Zed", exact: true }).click();
    await page.getByRole("button", { name: "Erase account…" }).click();
    const dialog = page.getByRole("dialog", { name: "Erase Zed?" });
    const erase = dialog.getByRole("button", { name: "Erase for good" });
    expect(await erase.isDisabled()).toBe(true);
    await dialog.getByRole("textbox", { name: "Account id" }).fill("Zed");
    expect(await erase.isDisabled()).toBe(true);
    await dialog.getByRole("textbox", { name: "Account id" }).fill(ids.Zed!);
    await erase.click();
    await page.getByRole("status").filter({ hasText: "Zed’s account is erased." }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/admin/people");
    await eventually("Zed gone from the list", async () => (await page.getByRole("link", { name: "Zed", exact: true }).count()) === 0);
    // Said once: a reload of the list does not say it again.
    await page.reload();
    await personRow(page, "Dina").waitFor();
    expect(await page.getByText("Zed’s account is erased.").count()).toBe(0);
    const gone = await json<{ code: string }>((await as(stack, "Ada"))(`/admin/users/${ids.Zed}`));
    expect(gone.code).toBe("user_not_found");
    await context.close();
  });

  it("shows usage over a range: credits and cost per day and per model as charts with axes, the top users, and a CSV", async () => {
    const { context, page } = await adminPage();
    await page.getByRole("navigation", { name: "Admin sections" }).getByRole("link", { name: "Usage" }).click();
    expect(new URL(page.url()).pathname).toBe("/admin/usage-report");
    const perDay = page.getByRole("list", { name: "Credits per day" });
    await perDay.waitFor();
    expect(await perDay.getByRole("listitem").count()).toBe(30);
    const today = new Date().toISOString().slice(0, 10);
    expect(await perDay.getByRole("listitem").last().getAttribute("aria-label")).toBe(`${today}: 2 credits`);
    // Each chart says what its axes are: the unit, 0 and a tick past the highest bar, and the days.
    const axisTexts = await page.getByRole("figure").filter({ has: perDay }).evaluate((figure) => {
      const texts: string[] = [];
      const walker = document.createTreeWalker(figure, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.textContent!.trim()) texts.push(n.textContent!.trim());
      return texts;
    });
    expect(axisTexts).toEqual(expect.arrayContaining(["credits", "0", "today", expect.stringMatching(/^[A-Z][a-z]{2} \d{1,2}$/)]));
    expect(Math.max(...axisTexts.filter((t) => /^\d+$/.test(t)).map(Number))).toBeGreaterThanOrEqual(2);
    await page.getByRole("list", { name: "Cost per day" }).waitFor();
    const model = page.getByRole("list", { name: "Credits per model" }).getByRole("listitem");
    expect(await model.getAttribute("aria-label")).toBe("svc-70b: 2 credits");
    const cost = await page.getByRole("list", { name: "Cost per model" }).getByRole("listitem").getAttribute("aria-label");
    expect(cost).toMatch(/^svc-70b: \d+(\.\d+)?$/);
    expect(await page.getByRole("figure").filter({ has: page.getByRole("list", { name: "Credits per model" }) }).getByText("credits", { exact: true }).isVisible()).toBe(true);
    const top = page.getByRole("region", { name: "Top users table" });
    expect((await top.getByRole("link").allTextContents()).sort()).toEqual(["Bruno", "Dina"]);

    const download = page.waitForEvent("download");
    await page.getByRole("combobox", { name: "CSV rows per" }).selectOption("model");
    await page.getByRole("button", { name: "Download CSV" }).click();
    const file = await download;
    const from = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(file.suggestedFilename()).toBe(`usage-${from}-${today}-model.csv`);
    // The browser runs apart from this process: the file comes as a stream.
    const chunks: Buffer[] = [];
    for await (const chunk of await file.createReadStream()) chunks.push(chunk as Buffer);
    const lines = Buffer.concat(chunks).toString("utf8").trim().split("\r\n");
    expect(lines[0]).toBe("model,messages,credits,inputTokens,outputTokens,estimatedTokenRows,failed,medianTimeToFirstTokenMs,cost,ratingsUp,ratingsDown");
    expect(lines[1]).toMatch(/^svc-70b,2,2,/);

    await page.getByLabel("From (UTC)").fill("2030-01-01");
    await page.getByRole("alert").filter({ hasText: "The first day must not be after the last." }).waitFor();
    await context.close();
  });

  it("makes an invite whose code shows once, sees who used it, and deletes one", async () => {
    const { context, page } = await adminPage();
    await page.getByRole("navigation", { name: "Admin sections" }).getByRole("link", { name: "Invites" }).click();
    await page.getByRole("spinbutton", { name: "Uses" }).fill("3");
    await page.getByLabel("Last day (optional)").fill("2099-06-30");
    await page.getByRole("combobox", { name: "Plan" }).selectOption({ label: "Team" });
    await page.getByRole("textbox", { name: "Note (what it is for)" }).fill("Workshop");
    await page.getByRole("button", { name: "Create invite" }).click();
    const codeBox = page.getByRole("textbox", { name: "New invite code" });
    const code = await codeBox.inputValue();
    expect(code.length).toBeGreaterThan(10);
    await page.getByRole("button", { name: "Copy code" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code);
    const row = page.getByRole("row").filter({ hasText: "Workshop" });
    expect(await row.getByRole("cell").allTextContents()).toEqual(["3", expect.stringMatching(/2099/), "Team", "no one yet", "Delete"]);
    await page.getByRole("button", { name: "I have saved it" }).click();
    expect(await codeBox.count()).toBe(0);

    // Someone new signs up with it on the login screen, and shows as its user.
    const newcomer = await stack.newContext();
    const signUp = await newcomer.newPage();
    await signUp.goto("/login");
    await signUp.getByLabel("Invite code").fill(code);
    await signUp.getByLabel("Your name").fill("Nia");
    await signUp.getByRole("button", { name: "Log in" }).click();
    await signUp.getByRole("textbox", { name: "Message" }).waitFor();
    await newcomer.close();
    await page.reload();
    await eventually("Nia listed as its user", async () => (await row.getByRole("cell").allTextContents()).join("|") === `2|${(await row.getByRole("cell").nth(1).textContent())!}|Team|Nia|Delete`);

    await page.getByRole("button", { name: "Delete invite Workshop" }).click();
    await page.getByRole("dialog", { name: "Delete this invite?" }).getByRole("button", { name: "Delete invite" }).click();
    await eventually("the invite gone", async () => (await row.count()) === 0);
    await context.close();
  });

  it("lists every action in the audit log: who, what, whom and the details", async () => {
    const { context, page } = await adminPage();
    await page.goto("/admin/audit-log");
    const table = page.getByRole("region", { name: "Audit log table" });
    await table.waitFor();
    const rows = (await table.getByRole("row").allTextContents()).slice(1);
    const expected = [
      /Adadeleted an invite–invite inv_/,
      /Adacreated an invite–3 uses; plan: Team; expires .*2099.*; note: Workshop/,
      /Adaerasederased account usr_/,
      /Adachanged the plan ofBrunoplan: Team/,
      /Adagranted credits toBruno250 credits; note: Workshop/,
      /Adalifted the suspension ofBruno$/,
      /AdasuspendedBrunoreason: Posting spam links/,
    ];
    expect(rows).toHaveLength(expected.length);
    for (const [i, text] of rows.entries()) expect(text).toMatch(expected[i]!);
    await context.close();
  });

  // The two themes side by side: each reads the same pages in a browser context of its own,
  // and most of their time is waiting on axe in its own renderer.
  for (const colorScheme of ["light", "dark"] as const) {
    it.concurrent(`fits a 375 px screen and finds no serious axe violations (${colorScheme})`, async ({ expect }) => {
      const { context, page } = await adminPage({ width: 375, colorScheme });
      const sections = page.getByRole("navigation", { name: "Admin sections" });
      // As a person goes through them, in the page adminPage opened: a person's page from the
      // People list, then each section by its tab (and the scan's script stays in the page).
      const visits: Array<[string, () => Promise<void>]> = [
        ["/admin/people", () => sections.getByRole("link", { name: "People", exact: true }).click()],
        [`/admin/people/${ids.Bruno}`, () => personRow(page, "Bruno").getByRole("link", { name: "Bruno", exact: true }).click()],
        ["/admin/usage-report", () => sections.getByRole("link", { name: "Usage", exact: true }).click()],
        ["/admin/invite-codes", () => sections.getByRole("link", { name: "Invites", exact: true }).click()],
        ["/admin/audit-log", () => sections.getByRole("link", { name: "Audit", exact: true }).click()],
      ];
      for (const [path, go] of visits) {
        await go();
        await page.waitForURL(path);
        await sections.waitFor();
        await page.waitForLoadState("networkidle");
        // Nothing wider than the phone but the tables, which scroll in their own box.
        expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(375);
        expect(await page.locator("main").evaluate((m) => m.scrollWidth - m.clientWidth), path).toBeLessThanOrEqual(0);
        expect(await seriousViolations(page), `${path} (${colorScheme})`).toEqual([]);
      }
      await context.close();
    }, 120_000);
  }

  it("shows no Admin entry to a person who is no admin, 'not available' at /admin, and loads none of its code", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const loaded: string[] = [];
    page.on("request", (r) => r.resourceType() !== "document" && loaded.push(new URL(r.url()).pathname));
    await logInLocally(page, "Dina");
    await page.getByRole("navigation", { name: "Conversations" }).getByRole("link", { name: "Archived" }).waitFor();
    expect(await page.getByRole("link", { name: "Admin" }).count()).toBe(0);
    await page.goto("/admin");
    await page.getByRole("heading", { name: "Not available" }).waitFor();
    expect(await page.getByText("The Admin area is for the service's admins.").isVisible()).toBe(true);
    await page.goto("/admin/people/usr_x");
    await page.getByRole("heading", { name: "Not available" }).waitFor();
    expect(loaded.filter((p) => /admin-screen/.test(p))).toEqual([]);
    expect(loaded.filter((p) => p.startsWith("/admin/"))).toEqual([]);
    await context.close();
  });

  it("tells a suspended person so, with the reason, in the chat they had open and when they sign in again", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "Cleo");
    await sendAndWait(page, "before");
    const admin = await as(stack, "Ada");
    expect((await admin(`/admin/users/${ids.Cleo}/suspend`, { body: { reason: "Shared an account" } })).status).toBe(204);

    // The next thing the chat asks for answers 403 account_suspended: the page says so. That is
    // the message sent now, or the new conversation's title check the first reply started
    // (800 ms later), which can come first and take the composer away: either must show it.
    const composer = page.getByRole("textbox", { name: "Message" });
    const suspended = page.getByRole("heading", { name: "Your account is suspended" });
    if (!(await suspended.isVisible())) {
      await composer
        .fill("after", { timeout: 5_000 })
        .then(() => composer.press("Enter"))
        .catch(async (error) => {
          if (!(await suspended.isVisible())) throw error;
        });
    }
    await suspended.waitFor();
    expect(await page.getByRole("alert").textContent()).toBe("This account is suspended by the service's operator (Shared an account): ask them to lift it.");
    expect(await composer.count()).toBe(0);

    // A reload finds the session ended (suspension ends it); signing in again is refused the same way.
    await page.reload();
    await page.getByLabel("Your name").fill("Cleo");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "Your account is suspended" }).waitFor();
    expect(await page.getByRole("alert").textContent()).toMatch(/\(Shared an account\)/);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Your name").waitFor();

    // Lifted: the same person signs in to their chat again.
    expect((await admin(`/admin/users/${ids.Cleo}/unsuspend`, { method: "POST" })).status).toBe(204);
    await page.getByLabel("Your name").fill("Cleo");
    await page.getByRole("button", { name: "Log in" }).click();
    await composer.waitFor();
    await context.close();
  });
});
