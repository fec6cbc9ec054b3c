import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

// Nothing a person writes is lost (issue 27): a reply goes on when its chat is left, Stop keeps
// the question and what the reply holds, and both are there after a reload.

const counter = (page: Page) => page.getByRole("status", { name: /^Credits:/ });
const creditsLeft = async (page: Page) => Number(/Credits: (\d+) of/.exec((await counter(page).getAttribute("aria-label")) ?? "")?.[1]);
const replies = (page: Page) => page.getByRole("listitem", { name: "Assistant replied" });
const chats = (page: Page) => page.getByRole("list", { name: "Chats" });

async function typeAndPressEnter(page: Page, text: string) {
  const composer = page.getByRole("textbox", { name: "Message" });
  await composer.fill(text);
  await composer.press("Enter");
}

/** Whether the element is wholly inside the window (not below its fold). */
const inView = (page: Page, text: string) =>
  page.getByText(text).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight;
  });

describe.skipIf(!hasChromium)("replies that finish without their tab, and Stop that keeps", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ dailyCredits: 500 });
  });
  afterEach(() => {
    stack.upstream.mode = "ok";
    stack.upstream.releaseHeld();
    stack.upstream.holds = undefined;
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  it("keeps writing a reply while another chat is open, marks its chat as answering, and shows it whole on coming back", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "ivy");
    await sendAndWait(page, "the other chat");
    const other = new URL(page.url()).pathname;

    // A new chat whose reply goes on (a word at a time) until the test lets it end.
    await page.getByRole("link", { name: "New chat" }).first().click();
    stack.upstream.holds = (req) => req.body.messages.at(-1)?.content === "tell me a long story";
    stack.upstream.reply = () => "Once upon a time a fern grew in a pot.";
    await typeAndPressEnter(page, "tell me a long story");
    await replies(page).filter({ hasText: "Once upon a time" }).waitFor();
    const story = new URL(page.url()).pathname;
    expect(story).toMatch(/^\/c\/.+/);

    // Away, mid-reply: the navigator says that chat is answering.
    await page.goto(other);
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "the other chat" }).waitFor();
    await chats(page).getByRole("img", { name: /answering/ }).waitFor();

    // Back while it still runs: what it wrote so far, and more coming.
    await chats(page).getByRole("link", { name: /tell me a long story/ }).click();
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "tell me a long story" }).waitFor();
    const reply = replies(page).filter({ hasText: "Once upon a time a fern grew in a pot." });
    await reply.waitFor();
    expect(await page.getByRole("button", { name: "Stop" }).isVisible()).toBe(true);
    const before = (await reply.textContent())!.length;
    await eventually("more of the reply arrives", async () => (await reply.textContent())!.length > before);

    stack.upstream.releaseHeld();
    await page.getByRole("button", { name: "Send" }).waitFor();
    const whole = (await reply.getByRole("paragraph").first().textContent())!;
    await eventually("the chat is no longer answering", async () => (await chats(page).getByRole("img", { name: /answering/ }).count()) === 0);

    // Stored whole, and charged as any reply.
    await page.reload();
    await replies(page).filter({ hasText: whole }).waitFor();
    expect(await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "tell me a long story" }).count()).toBe(1);
    await eventually("two replies charged", async () => (await creditsLeft(page)) === 498);
    await context.close();
  });

  it("stops a reply where it is: the note is in sight, and after a reload the question and the partial reply are there to regenerate", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.setViewportSize({ width: 375, height: 812 });
    await logInLocally(page, "jon");
    stack.upstream.holds = () => true;
    stack.upstream.reply = () => "Ferns like shade and damp soil.";
    await typeAndPressEnter(page, "what do ferns like?");
    await replies(page).filter({ hasText: "Ferns like shade" }).waitFor();

    await page.getByRole("button", { name: "Stop" }).click();
    const note = "Stopped. What was written so far is kept; regenerate it for a whole reply.";
    await page.getByText(note).waitFor();
    await eventually("the note is in sight", () => inView(page, note));
    expect(await page.getByRole("textbox", { name: "Message" }).inputValue()).toBe("");
    await eventually("the partial reply is charged one credit", async () => (await creditsLeft(page)) === 499);

    await page.reload();
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "what do ferns like?" }).waitFor();
    // Stop lands wherever the reply has got to: what was shown before it, at least.
    const reply = replies(page).filter({ hasText: "Ferns like shade" });
    await reply.getByText(note).waitFor();

    // Regenerated: a whole reply, its second version.
    stack.upstream.holds = undefined;
    stack.upstream.reply = () => "Ferns like shade, damp soil and misting.";
    await reply.getByRole("button", { name: "Regenerate reply" }).click();
    await replies(page).filter({ hasText: "misting" }).waitFor();
    await page.getByRole("group", { name: "Version 2 of 2" }).waitFor();
    await context.close();
  });

  it("stops a reply before its first word: nothing is charged, and the question stays", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "kim");
    await eventually("the counter shows the full allowance", async () => (await creditsLeft(page)) === 500);
    // The model takes the request and says nothing.
    stack.upstream.mode = "slow";
    await typeAndPressEnter(page, "are you there?");
    await page.getByRole("status").filter({ hasText: "The assistant is writing a reply" }).waitFor();
    await eventually("the chat exists", async () => /^\/c\/.+/.test(new URL(page.url()).pathname));
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByRole("button", { name: "Send" }).waitFor();
    await page.reload();
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "are you there?" }).waitFor();
    await eventually("refunded", async () => (await creditsLeft(page)) === 500);
    await context.close();
  });

  it("keeps a reply's thumbs up or down across a reload, and takes it back when pressed again", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "lou");
    await sendAndWait(page, "rate me");
    const reply = replies(page).last();
    let rated = page.waitForResponse((r) => r.url().endsWith("/rating") && r.ok());
    await reply.getByRole("button", { name: "Good reply" }).click();
    expect(await reply.getByRole("button", { name: "Good reply" }).getAttribute("aria-pressed")).toBe("true");
    await rated;

    await page.reload();
    const again = replies(page).last();
    await again.getByRole("button", { name: "Good reply", pressed: true }).waitFor();
    rated = page.waitForResponse((r) => r.url().endsWith("/rating") && r.ok());
    await again.getByRole("button", { name: "Bad reply" }).click();
    await again.getByRole("button", { name: "Bad reply", pressed: true }).waitFor();
    expect(await again.getByRole("button", { name: "Good reply" }).getAttribute("aria-pressed")).toBe("false");
    await rated;
    await page.reload();
    await replies(page).last().getByRole("button", { name: "Bad reply", pressed: true }).waitFor();
    await context.close();
  });
});
