import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const chats = (page: Page) => page.getByRole("list", { name: "Chats" });

async function openOptions(page: Page, name: string) {
  await page.getByRole("button", { name: `Options for ${name}` }).click();
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Opens the options of the conversation `name` and checks what a person sees: the whole
 * menu on screen, touching its button (below it, or above when there is no room), and every
 * item whole, readable and the topmost thing at its own centre (not cut off or covered).
 */
async function expectMenuBesideItsButton(page: Page, name: string) {
  const viewport = page.viewportSize()!;
  const button = page.getByRole("button", { name: `Options for ${name}` });
  await button.click();
  const menu = page.getByRole("menu", { name: `Options for ${name}` });
  await menu.waitFor();
  await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("role"))).toBe("menuitem");
  const b = (await button.boundingBox()) as Box;
  const m = (await menu.boundingBox()) as Box;
  expect(m.x).toBeGreaterThanOrEqual(0);
  expect(m.y).toBeGreaterThanOrEqual(0);
  expect(m.x + m.width).toBeLessThanOrEqual(viewport.width);
  expect(m.y + m.height).toBeLessThanOrEqual(viewport.height);
  const gapBelow = m.y - (b.y + b.height);
  const gapAbove = b.y - (m.y + m.height);
  expect(Math.min(Math.abs(gapBelow), Math.abs(gapAbove))).toBeLessThanOrEqual(8);
  expect(m.x).toBeLessThan(b.x + b.width); // they overlap across: the menu hangs from its button
  expect(m.x + m.width).toBeGreaterThan(b.x);
  const items = menu.getByRole("menuitem");
  expect(await items.allTextContents()).toEqual(["Rename", "Move to group", "Pin", "Archive", "Share", "Export as Markdown", "Export as JSON", "Delete"]);
  for (const item of await items.all()) {
    const i = (await item.boundingBox()) as Box;
    expect(i.x).toBeGreaterThanOrEqual(m.x);
    expect(i.x + i.width).toBeLessThanOrEqual(m.x + m.width);
    // Its text, from first letter to last, is on screen and not under anything else.
    const whole = await item.evaluate((el) => {
      const range = document.createRange();
      range.selectNodeContents(el);
      const t = range.getBoundingClientRect();
      const middle = t.top + t.height / 2;
      const onTop = (x: number) => el.contains(document.elementFromPoint(x, middle));
      return t.width > 0 && t.left >= 0 && t.right <= innerWidth && onTop(t.left + 1) && onTop(t.right - 1) && el.scrollWidth <= el.clientWidth;
    });
    expect(whole, `“${await item.textContent()}” is whole and on top`).toBe(true);
  }
  await page.keyboard.press("Escape");
  await menu.waitFor({ state: "detached" });
  return { below: gapBelow >= 0 };
}

describe.skipIf(!hasChromium)("the context navigator", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("renames in place, moves into a new group folder and deletes after confirmation", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "ines");
    await sendAndWait(page, "how much light does a fern need");
    await chats(page).getByRole("link", { name: "how much light does a fern need" }).waitFor();

    await openOptions(page, "how much light does a fern need");
    await page.getByRole("menuitem", { name: "Rename" }).click();
    const name = page.getByRole("textbox", { name: "New name" });
    await name.fill("Fern light");
    await name.press("Enter");
    await chats(page).getByRole("link", { name: "Fern light" }).waitFor();

    await openOptions(page, "Fern light");
    await page.getByRole("menuitem", { name: "Move to group" }).click();
    const dialog = page.getByRole("dialog", { name: "Move “Fern light”" });
    await dialog.getByRole("radio", { name: "New group" }).check();
    await dialog.getByRole("textbox", { name: "New group name" }).fill("Houseplants");
    await dialog.getByRole("button", { name: "Move" }).click();
    const folder = page.getByRole("button", { name: /^Houseplants/ });
    await folder.waitFor();
    await eventually("the chat left the ungrouped list", async () => (await chats(page).getByRole("link", { name: "Fern light" }).count()) === 0);
    // The open conversation stays in sight: its new folder opens (navigator-details.test.ts).
    await page.getByRole("list", { name: "Houseplants" }).getByRole("link", { name: "Fern light" }).waitFor();
    expect(await folder.getAttribute("aria-expanded")).toBe("true");

    await openOptions(page, "Fern light");
    await page.getByRole("menuitem", { name: "Delete" }).click();
    await page.getByRole("dialog", { name: "Delete this conversation?" }).getByRole("button", { name: "Delete" }).click();
    await eventually("the chat is gone", async () => (await page.getByRole("link", { name: "Fern light" }).count()) === 0);
    await eventually("the deleted chat is closed", async () => new URL(page.url()).pathname === "/");
    await context.close();
  });

  it("finds a message as you type, highlights the words and opens the conversation at that message", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "jules");
    await sendAndWait(page, "which fertilizer suits an orchid");
    await page.getByRole("link", { name: "New chat" }).click();
    await sendAndWait(page, "cactus watering schedule");

    await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("fertilizer");
    const results = page.getByRole("list", { name: "Search results" });
    const hit = results.getByRole("link", { name: /which fertilizer suits an orchid/ }).first();
    await hit.waitFor();
    expect(await hit.locator("mark").first().textContent()).toMatch(/fertilizer/i);
    await hit.click();
    await eventually("the conversation opens at the message", async () => new URL(page.url()).searchParams.has("m"));
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "which fertilizer suits an orchid" }).waitFor();
    await context.close();
  });

  it("shares a conversation to a page anyone can read, and after revoking says it is no longer shared", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "kim");
    stack.upstream.reply = () => "Repot in **spring**.";
    await sendAndWait(page, "when to repot a ficus", "Repot in spring.");
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;

    await openOptions(page, "when to repot a ficus");
    await page.getByRole("menuitem", { name: "Share" }).click();
    const dialog = page.getByRole("dialog", { name: "Share “when to repot a ficus”" });
    await dialog.getByRole("combobox", { name: "Link expires" }).selectOption({ label: "7 days" });
    await dialog.getByRole("button", { name: "Create link" }).click();
    const link = dialog.getByRole("textbox", { name: "Public link" });
    await link.waitFor();
    const url = await link.inputValue();
    expect(url).toMatch(/\/s\/[\w-]+$/);
    await dialog.getByText(/Expires /).waitFor();
    await dialog.getByRole("button", { name: "Copy link" }).click();
    await dialog.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);

    // Someone else, not logged in, in a fresh browser profile.
    const stranger = await stack.newContext();
    const shared = await stranger.newPage();
    await shared.goto(url);
    await shared.getByRole("heading", { name: "when to repot a ficus" }).waitFor();
    await shared.getByRole("listitem", { name: "Assistant replied" }).getByText("spring").waitFor();
    expect(await shared.getByRole("button", { name: "Log in" }).count()).toBe(0);

    await dialog.getByRole("button", { name: "Revoke link" }).click();
    await dialog.getByRole("button", { name: "Create link" }).waitFor();
    await shared.reload();
    await shared.getByRole("heading", { name: "This conversation is no longer shared" }).waitFor();
    await stranger.close();
    await context.close();
  });

  it("shows earlier messages of a long conversation on request, and a search hit far back opens at it", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "lou");
    // 101 exchanges: 202 messages, more than one page of 200.
    const contextId = await page.evaluate(async (token) => {
      const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
      let id: string | undefined;
      for (let i = 0; i < 101; i++) {
        const message = i === 0 ? "the very first question about bonsai" : `question ${i}`;
        const res = await fetch("/chat/send", { method: "POST", headers, body: JSON.stringify({ message, ...(id ? { contextId: id } : {}) }) });
        id = ((await res.json()) as { contextId: string }).contextId;
      }
      return id!;
    }, await apiToken(stack, "lou"));
    await page.goto(`/c/${contextId}`);
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "question 100" }).waitFor();
    const first = page.getByRole("listitem", { name: "You said" }).filter({ hasText: "the very first question about bonsai" });
    expect(await first.count()).toBe(0);
    await page.getByRole("button", { name: "Show earlier messages" }).click();
    await first.waitFor();
    await eventually("no page left", async () => (await page.getByRole("button", { name: "Show earlier messages" }).count()) === 0);

    await page.getByRole("link", { name: "New chat" }).click();
    await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("bonsai");
    await page.getByRole("list", { name: "Search results" }).getByRole("link").first().click();
    await first.waitFor();
    expect(await first.isVisible()).toBe(true);
    await context.close();
  });

  for (const [width, height] of [[1280, 800], [375, 740]] as const) {
    it(`opens a conversation's menu beside its button, whole, for the first row and one at the bottom (${width} px)`, async () => {
      const context = await stack.newContext({ width, height });
      const page = await context.newPage();
      await logInLocally(page, `mae-${width}`);
      await page.evaluate(async (token) => {
        const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
        for (let i = 0; i < 40; i++) await fetch("/contexts", { method: "POST", headers, body: JSON.stringify({ name: `plant talk ${String(i).padStart(2, "0")}` }) });
      }, await apiToken(stack, `mae-${width}`));
      await page.reload();
      if (width < 768) await page.getByRole("button", { name: "Open conversations" }).click();
      await chats(page).getByRole("link", { name: "plant talk 39" }).waitFor({ state: "visible" });
      // The drawer's slide-in, to its end.
      await page.evaluate(() => Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition).map((a) => a.finished)));

      expect((await expectMenuBesideItsButton(page, "plant talk 39")).below).toBe(true);

      // The lowest row that is whole on screen: its menu has no room below and opens upwards.
      const scroller = await chats(page).evaluate((el) => {
        const r = el.closest("nav")!.querySelector("[role=list][aria-label=Chats]")!.parentElement!.getBoundingClientRect();
        return { top: r.top, bottom: r.bottom };
      });
      const rows = await chats(page).getByRole("link").all();
      let lowest: { name: string; bottom: number } | undefined;
      for (const row of rows) {
        const box = await row.boundingBox();
        if (!box || box.y < scroller.top || box.y + box.height > scroller.bottom) continue;
        if (!lowest || box.y + box.height > lowest.bottom) lowest = { name: (await row.textContent())!, bottom: box.y + box.height };
      }
      expect(lowest!.bottom).toBeGreaterThan(height - 160);
      expect((await expectMenuBesideItsButton(page, lowest!.name)).below).toBe(false);
      await context.close();
    });
  }

  it("loads more as it scrolls, keeping only the visible rows in the page", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "lee");
    await page.evaluate(async (token) => {
      const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
      for (let i = 0; i < 300; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            fetch("/contexts", { method: "POST", headers, body: JSON.stringify({ name: `seeded ${String(i + j).padStart(3, "0")}` }) }),
          ),
        );
      }
    }, await apiToken(stack, "lee"));
    await page.reload();
    await chats(page).getByRole("link", { name: "seeded 299" }).waitFor();
    const rows = chats(page).getByRole("listitem");
    expect(await rows.count()).toBeLessThan(80);

    // The oldest one is six pages away: scrolling down fetches them page by page.
    const oldest = chats(page).getByRole("link", { name: "seeded 000" });
    await eventually(
      "the oldest conversation scrolled into the list",
      async () => {
        await chats(page).hover();
        await page.mouse.wheel(0, 4000);
        return (await oldest.count()) === 1;
      },
      30_000,
    );
    expect(await rows.count()).toBeLessThan(80);
    await context.close();
  });
});
