import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, sessionTraces, startStack, type Stack } from "./support/stack";
import { injectWallets } from "./support/wallet";

// Signing in with a browser wallet: EIP-1193 providers injected into Chromium that announce
// themselves by EIP-6963 (or sit at window.ethereum), whose signatures come from real
// secp256k1 keys in Node. The server checks real EIP-4361 messages; nothing of the session
// is ever in the page's storage.

const newAccount = () => privateKeyToAccount(generatePrivateKey());
const short = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`;

describe.skipIf(!hasChromium)("signing in with a wallet", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("signs in with the one wallet in the browser, keeps nothing in storage, and a reload restores the session", async () => {
    const context = await stack.newContext();
    const account = newAccount();
    const { signed } = await injectWallets(context, [{ name: "Test Wallet", account }]);
    const page = await context.newPage();
    await page.goto("/c/somewhere");
    await page.getByRole("button", { name: "Continue with a wallet" }).click();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/c/somewhere");
    // The message the wallet signed is EIP-4361 for this origin, with the checksummed address.
    const message = Buffer.from(signed[0]!.slice(2), "hex").toString("utf8");
    expect(message).toMatch(new RegExp(`^${new URL(stack.url).host} wants you to sign in with your Ethereum account:\n${account.address}\n`));
    await page.getByRole("link", { name: new RegExp(short(account.address)) }).waitFor();
    expect(await sessionTraces(page)).toEqual([]);

    await page.reload();
    await page.getByRole("link", { name: new RegExp(short(account.address)) }).waitFor();
    expect(signed).toHaveLength(1); // no second signature: the cookie restored the session
    await page.getByRole("link", { name: "New chat" }).click();
    await sendAndWait(page, "hello from a wallet");
    expect(await sessionTraces(page)).toEqual([]);
    await context.close();
  });

  it("lets a person with several wallets choose one, and finds an old wallet at window.ethereum", async () => {
    const context = await stack.newContext();
    const [first, second] = [newAccount(), newAccount()];
    await injectWallets(context, [
      { name: "Fox Wallet", account: first },
      { name: "Rabbit Wallet", account: second },
    ]);
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByRole("button", { name: "Continue with a wallet" }).click();
    const list = page.getByRole("list", { name: "Wallets in this browser" });
    await list.getByRole("button", { name: "Rabbit Wallet" }).click();
    await page.getByRole("link", { name: new RegExp(short(second.address)) }).waitFor();
    await context.close();

    const legacy = await stack.newContext();
    const old = newAccount();
    await injectWallets(legacy, [{ name: "unused", account: old }], { legacy: true });
    const oldPage = await legacy.newPage();
    await oldPage.goto("/login");
    await oldPage.getByRole("button", { name: "Continue with a wallet" }).click();
    await oldPage.getByRole("link", { name: new RegExp(short(old.address)) }).waitFor();
    await legacy.close();
  });

  it("says what to do when there is no wallet, or the person declines to sign", async () => {
    const bare = await stack.newContext();
    const page = await bare.newPage();
    await page.goto("/login");
    await page.getByRole("button", { name: "Continue with a wallet" }).click();
    await page.getByRole("alert").filter({ hasText: "No wallet was found in this browser. Install a wallet extension" }).waitFor();
    await bare.close();

    const context = await stack.newContext();
    await injectWallets(context, [{ name: "Shy Wallet", account: newAccount(), behaviour: "decline" }]);
    const declined = await context.newPage();
    await declined.goto("/login");
    await declined.getByRole("button", { name: "Continue with a wallet" }).click();
    await declined.getByRole("alert").filter({ hasText: "You declined the request in your wallet" }).waitFor();
    expect(new URL(declined.url()).pathname).toBe("/login");
    await context.close();
  });

  it("adds a wallet to a name's account in Settings, lists the devices, and signs out everywhere else", async () => {
    const laptop = await stack.newContext();
    const account = newAccount();
    await injectWallets(laptop, [{ name: "Test Wallet", account }]);
    const page = await laptop.newPage();
    await logInLocally(page, "ines", "/settings/sign-in");
    const methods = page.getByRole("list", { name: "Your sign-in methods" });
    await methods.getByText("ines").waitFor();
    expect(await page.getByRole("button", { name: "Remove Name (local login) ines" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Add a wallet" }).click();
    await methods.getByText(account.address).waitFor();

    // The wallet now signs in to this account, on another device.
    const phone = await stack.newContext({ width: 375, height: 740 });
    await injectWallets(phone, [{ name: "Test Wallet", account }]);
    const phonePage = await phone.newPage();
    await phonePage.goto("/login");
    await phonePage.getByRole("button", { name: "Continue with a wallet" }).click();
    await phonePage.getByRole("textbox", { name: "Message" }).waitFor();
    await phonePage.getByRole("button", { name: "Open conversations" }).click();
    await phonePage.getByRole("link", { name: /ines/ }).waitFor();

    const devices = page.getByRole("list", { name: "Signed-in devices" });
    await page.reload();
    await eventually("two devices listed", async () => (await devices.getByRole("listitem").count()) === 2);
    await devices.getByText("This device").waitFor();
    await page.getByRole("button", { name: "Sign out everywhere else" }).click();
    await eventually("one device left", async () => (await devices.getByRole("listitem").count()) === 1);

    // On the phone, the next request finds its session ended.
    await phonePage.reload();
    await phonePage.getByRole("button", { name: "Continue with a wallet" }).waitFor();

    // Removing the name leaves the wallet; the wallet is then the only one and cannot go.
    await page.getByRole("button", { name: "Remove Name (local login) ines" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await eventually("the name removed", async () => (await methods.getByRole("listitem").count()) === 1);
    expect(await page.getByRole("button", { name: `Remove Wallet ${account.address}` }).isDisabled()).toBe(true);
    await laptop.close();
    await phone.close();
  });
});
