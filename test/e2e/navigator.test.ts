import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const chats = (page: Page) => page.getByRole("list", { name: "Chats" });

async function openOptions(page: Page, name: string) {
  await page.getByRole("button", { name: `Options for ${name}` }).click();
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
    const folder = page.getByRole("button", { name: /Houseplants/ });
    await folder.waitFor();
    await eventually("the chat left the ungrouped list", async () => (await chats(page).getByRole("link", { name: "Fern light" }).count()) === 0);
    expect(await folder.getAttribute("aria-expanded")).toBe("false");
    await folder.click();
    await page.getByRole("list", { name: "Houseplants" }).getByRole("link", { name: "Fern light" }).waitFor();

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
    const contextId = await page.evaluate(async () => {
      const headers = { Authorization: `Bearer ${localStorage.getItem("auth.token")}`, "Content-Type": "application/json" };
      let id: string | undefined;
      for (let i = 0; i < 101; i++) {
        const message = i === 0 ? "the very first question about bonsai" : `question ${i}`;
        const res = await fetch("/chat/send", { method: "POST", headers, body: JSON.stringify({ message, ...(id ? { contextId: id } : {}) }) });
        id = ((await res.json()) as { contextId: string }).contextId;
      }
      return id!;
    });
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

  it("loads more as it scrolls, keeping only the visible rows in the page", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "lee");
    await page.evaluate(async () => {
      const headers = { Authorization: `Bearer ${localStorage.getItem("auth.token")}`, "Content-Type": "application/json" };
      for (let i = 0; i < 300; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            fetch("/contexts", { method: "POST", headers, body: JSON.stringify({ name: `seeded ${String(i + j).padStart(3, "0")}` }) }),
          ),
        );
      }
    });
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
