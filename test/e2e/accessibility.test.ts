import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { seriousViolations } from "./support/axe";
import { hasChromium } from "./support/chromium";
import { apiToken, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

describe.skipIf(!hasChromium)("accessibility", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterEach(() => {
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  for (const theme of ["light", "dark"] as const) {
    it(`finds no serious or critical axe violations on login, chat and settings (${theme})`, async () => {
      const context = await stack.newContext({ colorScheme: theme });
      const page = await context.newPage();
      const blocked: string[] = [];
      page.on("console", (m) => /Content Security Policy/i.test(m.text()) && blocked.push(m.text()));
      await page.goto("/login");
      await page.getByLabel("Your name").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      await logInLocally(page, `rosa-${theme}`);
      stack.upstream.reply = () => "A **Markdown** reply with `code` and a [link](https://example.test).";
      await sendAndWait(page, "hello", "A Markdown reply");
      expect(await seriousViolations(page)).toEqual([]);

      // Settings opened at its first section, then the others by their tabs, as a person goes
      // through them (and the scan's script stays in the page).
      await page.goto("/settings/profile");
      for (const [section, tab] of [["profile"], ["api-keys", "API keys"], ["usage", "Usage"]] as const) {
        if (tab) await page.getByRole("navigation", { name: "Settings sections" }).getByRole("link", { name: tab, exact: true }).click();
        await page.waitForURL(`/settings/${section}`);
        await page.getByRole("heading", { name: "Settings" }).waitFor();
        await page.getByRole("link", { name: "Usage" }).waitFor();
        await page.waitForLoadState("networkidle");
        expect(await seriousViolations(page), section).toEqual([]);
      }
      // Nothing the client does needs more than the strict CSP the server sends.
      expect(blocked).toEqual([]);
      // And the scan sees what it is for: a button with no name is a critical violation.
      await page.evaluate(() => document.querySelector("main")!.append(document.createElement("button")));
      expect(await seriousViolations(page)).toEqual([expect.stringMatching(/^button-name: /)]);
      await context.close();
    });
  }

  it("has no text under 12 px and a description on every page (login, chat, search, settings, share)", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    /** Every piece of text a person can see, with its size: none under 12 px (math's scripts aside). */
    const smallText = (p: Page) =>
      p.evaluate(() => {
        const small: string[] = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const el = node.parentElement!;
          if (!node.textContent!.trim() || el.closest("math") || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
          const { width, height } = el.getBoundingClientRect();
          if (width <= 1 || height <= 1) continue; // visually hidden, for screen readers
          const size = parseFloat(getComputedStyle(el).fontSize);
          if (size < 12) small.push(`${size}px: ${node.textContent!.trim().slice(0, 40)}`);
        }
        return small;
      });
    const description = (p: Page) => p.locator('meta[name="description"]').getAttribute("content");
    await page.goto("/login");
    await page.getByLabel("Your name").waitFor();
    expect(await smallText(page)).toEqual([]);
    expect(await description(page)).toMatch(/\w{4,}.{30,}/);

    await logInLocally(page, "ugo");
    stack.upstream.reply = () => "Notes:\n\n- a `pot`\n\n```js\nwater(plant);\n```\n\n> quoted <sup>1</sup>";
    await sendAndWait(page, "small print", "Notes:");
    await page.getByRole("button", { name: /^Options for / }).first().click();
    await page.getByRole("menu").waitFor();
    expect(await smallText(page)).toEqual([]);
    expect(await description(page)).toMatch(/\w{4,}.{30,}/);
    await page.keyboard.press("Escape");
    await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("small");
    await page.getByRole("list", { name: "Search results" }).getByRole("link").first().waitFor();
    expect(await smallText(page)).toEqual([]);

    for (const section of ["profile", "api-keys", "usage"]) {
      await page.goto(`/settings/${section}`);
      await page.getByRole("heading", { name: "Settings" }).waitFor();
      await page.waitForLoadState("networkidle");
      expect(await smallText(page), section).toEqual([]);
    }

    const token = await apiToken(stack, "ugo");
    const contextId = await page.evaluate(async (token) => {
      const res = await fetch("/contexts?limit=1", { headers: { Authorization: `Bearer ${token}` } });
      return ((await res.json()) as { items: Array<{ id: string }> }).items[0]!.id;
    }, token);
    const url = await page.evaluate(
      async ([id, token]) => {
        const res = await fetch(`/contexts/${id}/share`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: "{}",
        });
        return ((await res.json()) as { url: string }).url;
      },
      [contextId, token] as const,
    );
    const stranger = await stack.newContext();
    const shared = await stranger.newPage();
    await shared.goto(url);
    await shared.getByText("Notes:").waitFor();
    expect(await smallText(shared)).toEqual([]);
    expect(await description(shared)).toMatch(/\w{4,}.{30,}/);
    await stranger.close();
    await context.close();
  });

  it("works with the keyboard alone: log in, send, open the options of a conversation", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/login");
    // Focused as it appears, not a frame later: what a person types at once is not lost. Seen
    // from the first frame that draws the field.
    const field = await page.waitForFunction(
      () => {
        const input = document.querySelector("input[name=name]");
        return input && { focused: input === document.activeElement };
      },
      undefined,
      { polling: "raf" },
    );
    expect(await field.jsonValue()).toEqual({ focused: true });
    await page.keyboard.type("sam");
    await page.keyboard.press("Enter");
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.waitFor();
    await composer.focus();
    await page.keyboard.type("typed without a mouse");
    await page.keyboard.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "typed without a mouse" }).waitFor();
    const options = page.getByRole("button", { name: "Options for typed without a mouse" });
    await options.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("menuitem", { name: "Rename" }).waitFor();
    // The menu moves focus to its first item once it has rendered: a frame after it appears.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Rename");
    await page.keyboard.press("Escape");
    await expect.poll(() => options.evaluate((el) => el === document.activeElement)).toBe(true);
    await context.close();
  });

  it("turns the navigator into a drawer at phone width (375 px)", async () => {
    const context = await stack.newContext({ width: 375, height: 740 });
    const page = await context.newPage();
    await logInLocally(page, "tia");
    const newChat = page.getByRole("link", { name: "New chat" });
    expect(await newChat.isVisible()).toBe(false);
    await page.getByRole("button", { name: "Open conversations" }).click();
    await newChat.waitFor({ state: "visible" });
    await page.getByRole("button", { name: "Close conversations" }).click();
    await newChat.waitFor({ state: "hidden" });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await context.close();
  });
});
