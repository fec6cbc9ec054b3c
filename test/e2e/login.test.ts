import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, sendAndWait, sessionTraces, startStack, type Stack } from "./support/stack";

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

  it("logs in with a name, stays logged in across a reload from the cookie alone, and logging out ends the session", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "alice");
    const refreshes: string[] = [];
    page.on("request", (r) => r.url().endsWith("/auth/refresh") && refreshes.push(r.method()));
    // Which script asked for it: the page's first one (/theme.js), before the app's code arrived.
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    const askedBy: string[] = [];
    cdp.on("Network.requestWillBeSent", (e) => {
      if (e.request.url.endsWith("/auth/refresh")) askedBy.push(e.initiator.stack?.callFrames[0]?.url ?? e.initiator.type);
    });
    await page.reload();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.getByRole("link", { name: /alice/ }).waitFor();
    expect(refreshes).toEqual(["POST"]); // restored from the refresh cookie, once
    expect(askedBy.map((url) => new URL(url, stack.url).pathname)).toEqual(["/theme.js"]);
    await cdp.detach();
    expect(await sessionTraces(page)).toEqual([]);

    const cookie = (await context.cookies()).find((c) => c.name === "refresh_token")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/auth", secure: false });
    expect(cookie.expires - Date.now() / 1000).toBeGreaterThan(29 * 86_400);

    // A second tab of the same browser, signed in by the same cookie.
    const tab = await context.newPage();
    await tab.goto("/settings");
    await tab.getByRole("heading", { name: "Settings" }).waitFor();

    await Promise.all([page.waitForResponse((r) => r.url().endsWith("/auth/logout")), page.getByRole("button", { name: "Log out" }).click()]);
    await page.getByRole("button", { name: "Log in" }).waitFor();
    await tab.getByRole("button", { name: "Log in" }).waitFor(); // signed out there too
    expect((await context.cookies()).some((c) => c.name === "refresh_token")).toBe(false);
    // The session ended on the server: the old cookie, replayed, is refused.
    const replay = await fetch(`${stack.url}/auth/refresh`, { method: "POST", headers: { Cookie: `refresh_token=${cookie.value}`, Origin: stack.url } });
    expect(replay.status).toBe(401);
    await page.goto("/settings");
    await page.getByRole("button", { name: "Log in" }).waitFor();
    await context.close();
  });

  it("says where to open the service when the page is open at another of its addresses", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto(`${stack.url.replace("localhost", "127.0.0.1")}/login`);
    await page.getByText(/This page is open at 127\.0\.0\.1:\d+, but the service's address is/).waitFor();
    await page.getByRole("link", { name: stack.url }).click();
    await page.getByLabel("Your name").waitFor();
    expect(new URL(page.url()).origin).toBe(stack.url);
    expect(await page.getByText(/This page is open at/).count()).toBe(0);
    await context.close();
  });

  it("removes a token an earlier version of the client left in localStorage", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/login");
    await page.evaluate(() => {
      localStorage.setItem("auth.token", "eyJ.left.behind");
      localStorage.setItem("auth.expiresAt", "1");
    });
    await page.reload();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    expect(await sessionTraces(page)).toEqual([]);
    await context.close();
  });

  it("sends a session ended on another device back through login and keeps the message being typed", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "bob");
    await sendAndWait(page, "first message");
    const conversation = new URL(page.url()).pathname;
    expect(conversation).toMatch(/^\/c\/.+/);

    // Bob signs out everywhere else from his phone while he types here.
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("a long message I do not want to lose");
    const phone = await apiToken(stack, "bob");
    expect((await fetch(`${stack.url}/me/sessions`, { method: "DELETE", headers: { Authorization: `Bearer ${phone}` } })).status).toBe(200);
    // His Enter meets the ended session, unless a request the page makes by itself (the
    // conversation's lists, read again for its title) met it first and login is already there.
    await composer.press("Enter", { timeout: 3000 }).catch(() => {});
    await page.getByText("Your session ended").waitFor();
    await page.getByLabel("Your name").fill("bob");
    await page.getByRole("button", { name: "Log in" }).click();

    await eventually("back in the conversation", async () => new URL(page.url()).pathname === conversation);
    await expect.poll(() => composer.inputValue()).toBe("a long message I do not want to lose");
    await context.close();
  });
});

