import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

describe.skipIf(!hasChromium)("logging in locally", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("shows an unauthenticated visitor the login screen, never an empty chat", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/c/some-conversation");
    await page.getByRole("heading", { name: "Welcome to Assistant Chat" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(await page.getByRole("textbox", { name: "Message" }).count()).toBe(0);
    await context.close();
  });

  it("logs in with a name, stays logged in across a reload, and logging out clears every token", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "alice");
    await page.reload();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.getByRole("link", { name: /alice/ }).waitFor();

    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    expect(stored).not.toMatch(/eyJ/); // no JWT anywhere
    await page.goto("/settings");
    await page.getByRole("button", { name: "Log in" }).waitFor();
    await context.close();
  });

  it("sends an expired session back through login and keeps the message being typed", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "bob");
    await sendAndWait(page, "first message");
    const conversation = new URL(page.url()).pathname;
    expect(conversation).toMatch(/^\/c\/.+/);

    // The token stops being valid while the person types.
    await page.evaluate(() => localStorage.setItem("auth.token", "expired.token.value"));
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("a long message I do not want to lose");
    await composer.press("Enter");
    await page.getByText("Your session ended").waitFor();
    await page.getByLabel("Your name").fill("bob");
    await page.getByRole("button", { name: "Log in" }).click();

    await eventually("back in the conversation", async () => new URL(page.url()).pathname === conversation);
    await expect.poll(() => composer.inputValue()).toBe("a long message I do not want to lose");
    await context.close();
  });
});
