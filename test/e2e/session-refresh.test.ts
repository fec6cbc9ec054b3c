import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, sendAndWait, sessionTraces, startStack, type Stack } from "./support/stack";

// Sessions that renew: access tokens last 4 seconds here (SESSION_ACCESS_TOKEN_SECONDS), so
// they expire while a reply streams and while the person types; the client renews them
// silently (before expiry, and after a 401 with one retry) and never loses what is typed.

describe.skipIf(!hasChromium)("a session that renews itself", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { SESSION_ACCESS_TOKEN_SECONDS: "4" } });
  });
  afterAll(() => stack?.close());

  it("renews the access token while a reply streams, and the next message and the draft go through", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "tess");
    const refreshes: number[] = [];
    page.on("response", (r) => r.url().endsWith("/auth/refresh") && refreshes.push(r.status()));

    // A reply that takes 7 s to stream, past the 4 s token's life.
    stack.upstream.pieceDelayMs = 500;
    stack.upstream.reply = () => "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("tell me a long story");
    await composer.press("Enter");
    // The person types the next question while the reply streams.
    await page.getByRole("button", { name: "Stop" }).waitFor();
    await composer.fill("and then?");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "fourteen" }).waitFor({ timeout: 20_000 });
    // The reply has ended when Stop gives way to Send (the model's stream closes after its last word).
    await page.getByRole("button", { name: "Send" }).waitFor();
    stack.upstream.pieceDelayMs = undefined;
    expect(refreshes.length).toBeGreaterThanOrEqual(1);
    expect(refreshes.every((status) => status === 200)).toBe(true);

    expect(await composer.inputValue()).toBe("and then?");
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)!.content}`;
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: and then?" }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/c\//);
    expect(await sessionTraces(page)).toEqual([]);
    await context.close();
  });

  it("renews after a 401 when the token expired before the client expected, and retries the request once", async () => {
    // This device's clock runs 6 s behind the server's: it believes a 4-second token good for
    // seconds longer than the server does (4 s and 1 s of tolerance), so a request in between
    // meets a 401.
    const context = await stack.newContext();
    await context.clock.install({ time: Date.now() - 6000 });
    const page = await context.newPage();
    const seen: string[] = [];
    page.on("response", (r) => {
      const path = new URL(r.url()).pathname;
      if (path === "/chat/send" || path === "/auth/refresh" || path === "/auth/session") seen.push(`${path} ${r.status()}`);
    });
    await logInLocally(page, "uma");
    await new Promise((r) => setTimeout(r, 5600));
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("after the token expired");
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: after the token expired" }).waitFor();
    await eventually("the exchange seen", async () => seen.includes("/chat/send 200"));
    // A browser that never signed in has no session to restore: the page does not ask for one.
    expect(seen).toEqual(["/auth/session 200", "/chat/send 401", "/auth/refresh 200", "/chat/send 200"]);
    await context.close();
  });
});
