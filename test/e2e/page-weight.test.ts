import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const KiB = 1024;

/**
 * What opening `path` costs on the wire: the bodies of every response until the page is
 * idle, as they travelled (the server gzips text), from a browser with nothing cached.
 */
async function pageWeight(context: BrowserContext, path: string, ready: (page: Page) => Promise<unknown>) {
  const page = await context.newPage();
  const sizes: Promise<number>[] = [];
  page.on("requestfinished", (request) => sizes.push(request.sizes().then((s) => s.responseBodySize)));
  await page.goto(path);
  await ready(page);
  await page.waitForLoadState("networkidle");
  const bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  await page.close();
  return bytes;
}

describe.skipIf(!hasChromium)("what each page loads", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("keeps the chat under 150 KiB gzipped before any reply, and the login and share pages to their own code", async () => {
    const login = await pageWeight(await stack.newContext(), "/login", (p) => p.getByLabel("Your name").waitFor());

    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "wren");
    stack.upstream.reply = () => "Shared: **bright** light and a [guide](https://example.test/).";
    await sendAndWait(page, "light for a fern", "Shared: bright");
    const contextId = new URL(page.url()).pathname.split("/").pop()!;
    const url = await page.evaluate(
      async ([id, token]) => {
        const res = await fetch(`/contexts/${id}/share`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: "{}",
        });
        return ((await res.json()) as { url: string }).url;
      },
      [contextId, await apiToken(stack, "wren")] as const,
    );
    // A new chat, opened afresh with the session (its refresh cookie): nothing in the cache, no reply on screen.
    const chatContext = await stack.browser.newContext({ baseURL: stack.url, storageState: await context.storageState() });
    const chat = await pageWeight(chatContext, "/", (p) => p.getByRole("link", { name: "light for a fern" }).waitFor());
    const share = await pageWeight(await stack.newContext(), url, (p) => p.getByText("bright").waitFor());
    console.log(`page weight, gzipped: login ${(login / KiB).toFixed(1)} KiB, chat ${(chat / KiB).toFixed(1)} KiB, share ${(share / KiB).toFixed(1)} KiB`);

    expect(chat).toBeLessThan(150 * KiB);
    // One bundle for every page was ~82 KiB: the login and share pages now skip the chat's code.
    // (The login was 35 KiB before sign-up's policy and Turnstile came to it: 37.5 KiB now. A
    // development build, with preact/debug in the entry, is about 5 KiB more: 42.6.)
    expect(login).toBeLessThan(40 * KiB);
    expect(share).toBeLessThan(chat - 15 * KiB);
    await chatContext.close();
    await context.close();
  });
});
