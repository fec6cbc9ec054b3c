import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const chats = (page: Page) => page.getByRole("list", { name: "Chats" });

/** Whether the element is on screen and the topmost thing at its centre (not scrolled away, not covered). */
const inSight = (_page: Page, locator: ReturnType<Page["getByRole"]>) =>
  locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight && !!at && el.contains(at);
  });

describe.skipIf(!hasChromium)("the navigator's details", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterEach(() => {
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  it("keeps the open chat in sight when it moves into a new group, and renames and deletes the group", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "una");
    await sendAndWait(page, "how much light does a fern need");
    await page.getByRole("button", { name: "Options for how much light does a fern need" }).click();
    await page.getByRole("menuitem", { name: "Move to group" }).click();
    const dialog = page.getByRole("dialog", { name: "Move “how much light does a fern need”" });
    await dialog.getByRole("radio", { name: "New group" }).check();
    // Choosing "New group" is choosing to type its name.
    const newName = dialog.getByRole("textbox", { name: "New group name" });
    await expect.poll(() => newName.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.type("Houseplants");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });

    const folder = page.getByRole("button", { name: /^Houseplants/ });
    const open = page.getByRole("list", { name: "Houseplants" }).getByRole("link", { name: "how much light does a fern need" });
    await open.waitFor();
    expect(await folder.getAttribute("aria-expanded")).toBe("true");
    expect(await open.getAttribute("aria-current")).toBe("page");
    expect(await inSight(page, open)).toBe(true);

    await page.getByRole("button", { name: "Options for group Houseplants" }).click();
    await page.getByRole("menuitem", { name: "Rename group" }).click();
    const rename = page.getByRole("textbox", { name: "New group name" });
    await rename.fill("Ferns");
    await rename.press("Enter");
    await page.getByRole("button", { name: /^Ferns/ }).waitFor();
    expect(await folder.count()).toBe(0);

    await page.getByRole("button", { name: "Options for group Ferns" }).click();
    await page.getByRole("menuitem", { name: "Delete group" }).click();
    const confirm = page.getByRole("dialog", { name: "Delete the group “Ferns”?" });
    await confirm.getByText("Its conversation stays, outside any group.").waitFor();
    await confirm.getByRole("button", { name: "Delete group" }).click();
    await page.getByRole("button", { name: /^Ferns/ }).waitFor({ state: "detached" });
    // The conversation stays, outside any group.
    await chats(page).getByRole("link", { name: "how much light does a fern need" }).waitFor();
    await context.close();
  });

  it("lists a conversation once however many of its messages match, its table cells as text", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "vera");
    stack.upstream.reply = () => "| Plant | Water |\n|---|---|\n| Monstera | weekly |\n| Fern | twice a week |";
    await sendAndWait(page, "monstera watering table", "Monstera");
    await sendAndWait(page, "and the monstera in winter?", "Monstera");
    // Four messages match (two questions, two replies) once the search index has caught up.
    const token = await apiToken(stack, "vera");
    await eventually("the four messages are indexed", async () => {
      const found = await page.evaluate(
        (token) => fetch("/contexts/search?q=monstera", { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.json()),
        token,
      );
      return (found as { items: unknown[] }).items.length >= 4;
    });
    await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("monstera");
    const results = page.getByRole("list", { name: "Search results" }).getByRole("link");
    await results.first().waitFor();
    expect(await results.count()).toBe(1);
    for (const text of await results.allTextContents()) expect(text).not.toMatch(/\||---/);
    await context.close();
  });

  it("takes the archive notice away by itself, but not while the pointer is on it", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.clock.install();
    await logInLocally(page, "wim");
    await sendAndWait(page, "an old question");
    await page.getByRole("button", { name: "Options for an old question" }).click();
    await page.getByRole("menuitem", { name: "Archive" }).click();
    const notice = page.getByRole("status").filter({ hasText: "Archived “an old question”." });
    await notice.waitFor();

    await notice.hover();
    await page.clock.runFor(15_000);
    expect(await notice.isVisible()).toBe(true);

    await page.mouse.move(900, 400);
    await page.clock.runFor(11_000);
    await notice.waitFor({ state: "detached" });
    await context.close();
  });
});
