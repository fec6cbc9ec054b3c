import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { profileOf } from "./support/oidc-provider";
import { eventually, sendAndWait, sessionTraces, startStack, type Stack } from "./support/stack";
import { injectWallets } from "./support/wallet";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Page } from "playwright-core";

/** Fills the provider's own login form (on its origin) and comes back to the app at `appUrl`. */
async function throughProvider(page: Page, login: string, appUrl: string) {
  await page.getByPlaceholder("Enter any login").fill(login);
  await page.getByPlaceholder("and password").fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  const consent = page.getByRole("button", { name: "Continue" });
  await Promise.race([consent.click().catch(() => {}), page.waitForURL(`${appUrl}/**`)]);
}

describe.skipIf(!hasChromium)("signing in with an OpenID provider", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ oidc: true, env: { AUTH_PROVIDER_NAME: "Example ID" } });
  });
  afterAll(() => stack?.close());

  const throughTheProvider = (page: Page, login: string) => throughProvider(page, login, stack.url);

  it("goes through the provider (code + PKCE), trades its token for a session, seeds the profile, and a reload needs no provider", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/settings/profile");
    // One button per method: the provider's, by its name, and the wallet.
    await page.getByRole("button", { name: "Continue with a wallet" }).waitFor();
    await page.getByRole("button", { name: "Continue with Example ID" }).click();
    await throughTheProvider(page, "quinn");

    // Back on the app, where the person was going.
    await eventually("back on the settings page", async () => new URL(page.url()).pathname === "/settings/profile");
    const name = page.getByRole("textbox", { name: "Name" });
    await eventually("the name came from the token", async () => (await name.inputValue()) === profileOf("quinn").name);
    expect(await sessionTraces(page)).toEqual([]); // the PKCE verifier went with the redirect, and no token is kept

    // A reload restores the session from its cookie; the provider is not asked again.
    const toProvider: string[] = [];
    page.on("request", (r) => r.url().startsWith(stack.oidc!.issuer) && toProvider.push(r.url()));
    await page.reload();
    await eventually("the profile is back", async () => (await name.inputValue()) === profileOf("quinn").name);
    expect(toProvider).toEqual([]);

    await page.getByRole("link", { name: "New chat" }).click();
    await sendAndWait(page, "hello from an OpenID user");
    await context.close();
  });

  it("adds the provider's account to a wallet's account from Settings", async () => {
    const context = await stack.newContext();
    const account = privateKeyToAccount(generatePrivateKey());
    await injectWallets(context, [{ name: "Test Wallet", account }]);
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByRole("button", { name: "Continue with a wallet" }).click();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.goto("/settings/sign-in");
    await page.getByRole("button", { name: "Add Example ID" }).click();
    await throughTheProvider(page, "rowan");
    await eventually("back in Settings", async () => new URL(page.url()).pathname === "/settings/sign-in");
    const methods = page.getByRole("list", { name: "Your sign-in methods" });
    await methods.getByText(profileOf("rowan").name).waitFor();
    await methods.getByText(account.address).waitFor();
    await context.close();
  });
});

describe.skipIf(!hasChromium)("a deployed service with no model yet", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ oidc: true, env: { AUTH_PROVIDER_NAME: "Example ID", SVC_MODEL_BASE_URL: "" } });
  });
  afterAll(() => stack?.close());

  it("tells a signed-in person that chat is not available yet, with no Send button that could work", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/");
    await page.getByRole("button", { name: "Continue with Example ID" }).click();
    await throughProvider(page, "rosa", stack.url);

    const card = page.getByRole("region", { name: "Chat is not available yet" });
    await card.waitFor();
    // Words for a person using the service, not for its operator.
    expect(await card.textContent()).not.toMatch(/ollama|SVC_MODEL_BASE_URL|MODELS/i);
    expect(await page.getByRole("textbox", { name: "Message" }).isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
    await context.close();
  });
});
