import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

/** On screen, whole, and the topmost thing at its middle (not under the drawer or anything else). */
const whole = (locator: Locator) =>
  locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight && !!at && el.contains(at);
  });

/**
 * Notes what has the focus at the moment the menu is first shown (a MutationObserver's
 * callback runs as soon as the change that showed it is done): a key pressed then goes there.
 */
const noteFocusWhenShown = (page: Page) =>
  page.evaluate(() => {
    const w = window as { focusWhenShown?: string | null };
    w.focusWhenShown = undefined;
    const observer = new MutationObserver(() => {
      const menu = document.querySelector<HTMLElement>('[role="menu"]');
      if (!menu || menu.style.visibility === "hidden") return;
      w.focusWhenShown = document.activeElement?.getAttribute("role") ?? null;
      observer.disconnect();
    });
    observer.observe(document.body, { subtree: true, childList: true, attributes: true });
  });

async function choose(page: Page, item: string) {
  const button = page.getByRole("button", { name: "Conversation options" });
  expect(await whole(button)).toBe(true);
  await noteFocusWhenShown(page);
  await button.click();
  const menu = page.getByRole("menu", { name: "Conversation options" });
  await menu.waitFor();
  // The first item has the focus as the menu appears, so Escape or an arrow pressed at once works.
  expect(await page.evaluate(() => (window as { focusWhenShown?: string | null }).focusWhenShown)).toBe("menuitem");
  for (const entry of await menu.getByRole("menuitem").all()) expect(await whole(entry), (await entry.textContent()) ?? "").toBe(true);
  await menu.getByRole("menuitem", { name: item, exact: true }).click();
}

describe.skipIf(!hasChromium)("the open conversation's menu in the top bar", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  for (const [width, height] of [[1280, 800], [375, 812]] as const) {
    it(`renames, pins, moves, shares, exports, archives and deletes from the top bar (${width} px)`, async () => {
      const context = await stack.newContext({ width, height });
      const page = await context.newPage();
      await logInLocally(page, `abe-${width}`);
      // A new chat has nothing to act on yet.
      expect(await page.getByRole("button", { name: "Conversation options" }).count()).toBe(0);
      await sendAndWait(page, "repotting a ficus");
      const banner = page.getByRole("banner");

      await choose(page, "Rename");
      const name = banner.getByRole("textbox", { name: "New name" });
      expect(await name.inputValue()).toBe("repotting a ficus");
      await name.fill("Ficus care");
      await name.press("Enter");
      await banner.getByText("Ficus care").waitFor();
      await expect.poll(() => page.title()).toBe("Ficus care · Assistant Chat");

      await choose(page, "Pin");
      await page.getByRole("button", { name: "Conversation options" }).click();
      await page.getByRole("menuitem", { name: "Unpin" }).waitFor();
      await page.keyboard.press("Escape");
      // Closed before the next click on its button, which would otherwise close it again.
      await page.getByRole("menu", { name: "Conversation options" }).waitFor({ state: "hidden" });

      await choose(page, "Move to group");
      const move = page.getByRole("dialog", { name: "Move “Ficus care”" });
      await move.getByRole("radio", { name: "New group" }).check();
      await move.getByRole("textbox", { name: "New group name" }).fill("Trees");
      await move.getByRole("button", { name: "Move" }).click();
      await move.waitFor({ state: "hidden" });

      await choose(page, "Share");
      const share = page.getByRole("dialog", { name: "Share “Ficus care”" });
      await share.getByRole("button", { name: "Create link" }).click();
      await share.getByRole("textbox", { name: "Public link" }).waitFor();
      await share.getByRole("button", { name: "Done" }).click();

      const [download] = await Promise.all([page.waitForEvent("download"), choose(page, "Export as Markdown")]);
      expect(download.suggestedFilename()).toMatch(/\.md$/);

      await choose(page, "Archive");
      const archived = page.getByRole("status").filter({ hasText: "This conversation is archived" });
      await archived.waitFor();
      await archived.getByRole("button", { name: "Restore" }).click();
      await archived.waitFor({ state: "detached" });

      await choose(page, "Delete");
      await page.getByRole("dialog", { name: "Delete this conversation?" }).getByRole("button", { name: "Delete" }).click();
      await page.getByRole("heading", { name: "What can I help with?" }).waitFor();
      await eventually("back at a new chat", async () => new URL(page.url()).pathname === "/");
      await context.close();
    });
  }
});
