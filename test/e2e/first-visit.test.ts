import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { logInLocally, startStack, type Stack } from "./support/stack";

/** Everything the page reports as going wrong: console errors, uncaught exceptions, failed replies. */
function watchForTrouble(page: Page): string[] {
  const trouble: string[] = [];
  page.on("console", (m) => m.type() === "error" && trouble.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => trouble.push(`exception: ${e.message}`));
  page.on("response", (r) => r.status() >= 400 && trouble.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`));
  return trouble;
}

describe.skipIf(!hasChromium)("a first visit", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("welcomes someone who never signed in: no session ended, nothing failing in the console", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const trouble = watchForTrouble(page);
    await page.goto("/");
    await page.getByRole("heading", { name: "Welcome to Assistant Chat" }).waitFor();
    await page.getByLabel("Your name").waitFor();
    expect(new URL(page.url()).search).toBe("");
    expect(await page.getByText(/session ended/i).count()).toBe(0);
    expect(trouble).toEqual([]);
    await context.close();
  });

  it("welcomes someone who signed out on purpose the same way on their next visit", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "olga");
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("Your name").waitFor();
    expect(await page.getByText(/session ended/i).count()).toBe(0);

    const trouble = watchForTrouble(page);
    await page.goto("/");
    await page.getByLabel("Your name").waitFor();
    expect(new URL(page.url()).search).toBe("");
    expect(await page.getByText(/session ended/i).count()).toBe(0);
    expect(trouble).toEqual([]);
    await context.close();
  });
});
