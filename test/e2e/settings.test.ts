import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

/** Relative luminance contrast of two CSS rgb() colours. */
function contrast(a: string, b: string) {
  const lum = (c: string) => {
    const [r, g, bl] = (c.match(/[\d.]+/g) ?? []).slice(0, 3).map((v) => {
      const x = Number(v) / 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

/**
 * The usage chart says what its bars mean: a "credits" axis from 0 up past the highest day,
 * a date under the first day shown and "today" under the last, all on screen at 4.5:1 or more.
 */
async function expectReadableAxes(page: Page) {
  const chart = page.getByRole("figure");
  const bars = page.getByRole("list", { name: "Credits used per day" });
  const highest = Math.max(...(await bars.getByRole("listitem").evaluateAll((items) => items.map((i) => Number(/: (\d+) credits/.exec(i.getAttribute("aria-label") ?? "")?.[1])))));
  const labels = await chart.evaluate((figure) => {
    const background = (el: Element | null): string => {
      for (let e = el; e; e = e.parentElement) {
        const bg = getComputedStyle(e).backgroundColor;
        if (bg && !bg.endsWith(", 0)") && bg !== "transparent") return bg;
      }
      return "rgb(255, 255, 255)";
    };
    const out: Array<{ text: string; color: string; background: string; visible: boolean }> = [];
    const walker = document.createTreeWalker(figure, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement!;
      const r = el.getBoundingClientRect();
      if (!n.textContent!.trim() || r.width <= 1) continue;
      out.push({ text: n.textContent!.trim(), color: getComputedStyle(el).color, background: background(el), visible: r.left >= 0 && r.right <= innerWidth });
    }
    return out;
  });
  const texts = labels.map((l) => l.text);
  expect(texts).toContain("credits");
  expect(texts).toContain("0");
  const values = texts.filter((t) => /^\d+$/.test(t)).map(Number);
  expect(values.length).toBeGreaterThanOrEqual(2);
  expect(Math.max(...values)).toBeGreaterThanOrEqual(highest);
  expect(texts).toContain("today");
  expect(texts.some((t) => /^[A-Z][a-z]{2} \d{1,2}$/.test(t))).toBe(true); // a date such as "Nov 2"
  for (const l of labels) {
    expect(l.visible, l.text).toBe(true);
    expect(contrast(l.color, l.background), l.text).toBeGreaterThanOrEqual(4.5);
  }
}

describe.skipIf(!hasChromium)("settings", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("has every settings section the docs name (Settings → …), each opening its own page", async () => {
    const docs = ["README.md", "docs/web-client.md"].map((f) => readFileSync(new URL(`../../${f}`, import.meta.url), "utf8")).join("\n");
    const named = [...new Set([...docs.matchAll(/Settings → ([A-Z][\w ]*?)(?=[;:,.)]|$| \()/gm)].map((m) => m[1]!.trim()))];
    expect(named.length).toBeGreaterThan(0);
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "docs-reader", "/settings");
    const sections = page.getByRole("navigation", { name: "Settings sections" });
    await sections.waitFor(); // the session is restored from its cookie first
    for (const name of named) {
      const tab = sections.getByRole("link", { name, exact: true });
      expect(await tab.isVisible(), `docs name Settings → ${name}`).toBe(true);
      await tab.click();
      expect(await tab.getAttribute("aria-current")).toBe("page");
    }
    await context.close();
  });

  it("keeps the dark theme across a reload, from the first paint, and on another device of the same user", async () => {
    const context = await stack.newContext({ colorScheme: "light" });
    const page = await context.newPage();
    await logInLocally(page, "mia", "/settings/profile");
    const saved = page.waitForResponse((r) => r.url().endsWith("/me") && r.request().method() === "PATCH");
    await page.getByRole("radio", { name: "Dark" }).check();
    expect((await saved).status()).toBe(200);
    await eventually("dark applied", async () => (await page.evaluate(() => document.documentElement.dataset.theme)) === "dark");

    // Before any script of the app runs, /theme.js has already applied it.
    const atFirstPaint: string[] = [];
    await page.exposeFunction("recordTheme", (t: string) => void atFirstPaint.push(t));
    await page.addInitScript(() =>
      document.addEventListener("DOMContentLoaded", () =>
        (window as unknown as { recordTheme: (t: string) => void }).recordTheme(document.documentElement.dataset.theme ?? "none"),
      ),
    );
    await page.reload();
    // The form shows at once, disabled until the profile arrives with the saved choice.
    await eventually("the profile's theme is shown", () => page.getByRole("radio", { name: "Dark" }).isChecked());
    expect(atFirstPaint[0]).toBe("dark");

    // Another browser profile, same person: the preference comes from the profile.
    const other = await stack.newContext({ colorScheme: "light" });
    const second = await other.newPage();
    await logInLocally(second, "mia");
    await eventually("dark on the second device", async () => (await second.evaluate(() => document.documentElement.dataset.theme)) === "dark");

    await page.getByRole("radio", { name: "Auto (system)" }).check();
    await eventually("auto follows the light system", async () => (await page.evaluate(() => document.documentElement.dataset.theme)) === "light");
    await other.close();
    await context.close();
  });

  it("shows a new API key once with a copy button, then only its prefix; revoking asks first", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "noor", "/settings/api-keys");
    await page.getByRole("textbox", { name: "Key name" }).fill("laptop script");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = page.getByRole("textbox", { name: "New API key" });
    await key.waitFor();
    const secret = await key.inputValue();
    expect(secret).toMatch(/^sk_/);
    await page.getByText("this key won't be shown again").waitFor();
    await page.getByRole("button", { name: "Copy key" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    const row = page.getByRole("row", { name: /laptop script/ });
    await row.waitFor();
    const prefix = (await row.getByRole("cell").nth(1).textContent())!.replace("…", "");
    expect(secret.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeLessThan(secret.length);

    await page.reload();
    await page.getByRole("row", { name: /laptop script/ }).waitFor();
    expect(await page.content()).not.toContain(secret);

    await page.getByRole("button", { name: "Revoke laptop script" }).click();
    await page.getByRole("dialog", { name: "Revoke this key?" }).getByRole("button", { name: "Revoke key" }).click();
    await eventually("the key is gone", async () => (await page.getByRole("row", { name: /laptop script/ }).count()) === 0);
    await context.close();
  });

  it("charts today's use among the last 30 days and lists each message", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "omar");
    for (const text of ["one", "two", "three"]) await sendAndWait(page, text);
    await page.goto("/settings/usage");
    const today = new Date().toISOString().slice(0, 10);
    const chart = page.getByRole("list", { name: "Credits used per day" });
    await chart.getByRole("listitem", { name: `${today}: 3 credits` }).waitFor();
    expect(await chart.getByRole("listitem").count()).toBe(30);
    expect(await chart.getByRole("listitem", { name: /: 0 credits$/ }).count()).toBe(29);
    await page.getByText("3 credits in total.").waitFor();
    await expectReadableAxes(page);
    const history = page.getByRole("table").filter({ hasText: "Model" });
    await eventually("three messages listed", async () => (await history.getByRole("row").count()) === 4);
    await context.close();
  });

  for (const theme of ["light", "dark"] as const) {
    it(`labels the chart's value axis and days, readable in ${theme}`, async () => {
      const context = await stack.newContext({ colorScheme: theme, width: 375, height: 740 });
      const page = await context.newPage();
      await logInLocally(page, `olga-${theme}`);
      for (const text of ["one", "two", "three", "four", "five"]) await sendAndWait(page, text);
      await page.goto("/settings/usage");
      const today = new Date().toISOString().slice(0, 10);
      await page.getByRole("list", { name: "Credits used per day" }).getByRole("listitem", { name: `${today}: 5 credits` }).waitFor();
      await expectReadableAxes(page);
      await context.close();
    });
  }

  it("shows the profile form at once, disabled until the profile arrives, then filled in", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "quin");
    // GET /me held until the form has been seen without it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/me", async (route) => {
      if (route.request().method() === "GET") await held;
      await route.continue();
    });
    await page.goto("/settings/profile");
    const name = page.getByRole("textbox", { name: "Name" });
    await name.waitFor();
    expect(await name.isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Save profile" }).isDisabled()).toBe(true);
    await page.getByText("Pictures load only from the hosts this server allows").waitFor();
    release();
    await eventually("the form is filled in", async () => (await name.inputValue()) === "quin" && (await name.isEnabled()));
    expect(await page.getByRole("radio", { name: "Auto (system)" }).isChecked()).toBe(true);
    await context.close();
  });

  it("saves the name, and shows the microphone only while voice input is on", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "pia", "/settings/profile");
    await page.getByRole("textbox", { name: "Name" }).fill("Pia Plantlover");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();

    const voice = page.getByRole("checkbox", { name: /Voice input/ });
    await voice.check();
    await page.getByRole("link", { name: "New chat" }).click();
    await page.getByRole("button", { name: "Dictate a message" }).waitFor();
    await page.getByRole("link", { name: /Pia Plantlover/ }).waitFor();

    await page.goto("/settings/profile");
    // The form shows disabled and unticked until the profile arrives, and Playwright's
    // uncheck() returns at once on an unticked box: waits for the saved, ticked one.
    await page.getByRole("checkbox", { name: /Voice input/, checked: true, disabled: false }).waitFor();
    await voice.uncheck();
    await eventually("saved", async () => !(await voice.isChecked()));
    await page.getByRole("link", { name: "New chat" }).click();
    await page.getByRole("button", { name: "Send" }).waitFor();
    // The chat may read the profile while the save is still out, and then shows the saved one.
    await eventually("no microphone", async () => (await page.getByRole("button", { name: "Dictate a message" }).count()) === 0);
    await page.reload();
    await page.getByRole("button", { name: "Send" }).waitFor();
    await page.getByRole("link", { name: /Pia Plantlover/ }).waitFor();
    expect(await page.getByRole("button", { name: "Dictate a message" }).count()).toBe(0);
    await context.close();
  });
});
