import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { profileOf } from "./support/oidc-provider";
import { eventually, sendAndWait, startStack, type Stack } from "./support/stack";

describe.skipIf(!hasChromium)("logging in with an OpenID provider", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ oidc: true });
  });
  afterAll(() => stack?.close());

  it("goes through the provider's own login form (code + PKCE) and seeds the name and avatar from its claims", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/settings/profile");
    await page.getByRole("button", { name: "Continue to log in" }).click();

    // The provider's page, on its own origin.
    await page.getByPlaceholder("Enter any login").fill("quinn");
    await page.getByPlaceholder("and password").fill("any password");
    await page.getByRole("button", { name: "Sign-in" }).click();
    const consent = page.getByRole("button", { name: "Continue" });
    await Promise.race([consent.click().catch(() => {}), page.waitForURL(`${stack.url}/**`)]);

    // Back on the app, where the person was going.
    await eventually("back on the settings page", async () => new URL(page.url()).pathname === "/settings/profile");
    const name = page.getByRole("textbox", { name: "Name" });
    await eventually("the name came from the token", async () => (await name.inputValue()) === profileOf("quinn").name);
    const avatar = page.getByRole("img", { name: "Your avatar" });
    expect(await avatar.getAttribute("src")).toBe(profileOf("quinn").picture);
    // Its host is one the page may load pictures from (AVATAR_HOSTS): it shows.
    await expect.poll(() => avatar.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(2);
    const verifier = await page.evaluate(() => JSON.stringify({ ...sessionStorage }));
    expect(verifier).not.toContain("verifier");

    await page.getByRole("link", { name: "New chat" }).click();
    await sendAndWait(page, "hello from an OpenID user");
    await context.close();
  });
});
