import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInOnScreen, sendAndWait, sessionTraces, startStack, type Stack } from "./support/stack";

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
    await logInOnScreen(page, "alice");
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

  it("stays logged in when a reload cuts off a refresh the server had already answered", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInOnScreen(page, "rhea");
    const refreshCookie = async () => (await context.cookies()).find((c) => c.name === "refresh_token")!;
    const before = await refreshCookie();
    const refreshes: number[] = [];
    page.on("response", (r) => r.url().endsWith("/auth/refresh") && refreshes.push(r.status()));

    // The refresh of the next page load reaches the server, which replaces the token; before
    // its reply reaches the page, the person reloads: the reply, and the cookie it sets, are
    // lost, and the browser keeps the cookie it had.
    let handled: { status: number; setCookie: string } | undefined;
    let cut!: () => void;
    const wasCut = new Promise<void>((resolve) => (cut = resolve));
    await page.route(
      "**/auth/refresh",
      async (route) => {
        const response = await route.fetch();
        handled = { status: response.status(), setCookie: response.headers()["set-cookie"] ?? "" };
        await context.addCookies([before]);
        await page.reload();
        // The request went with the page it came from; nothing is left to answer.
        await route.abort("connectionaborted").catch(() => {});
        cut();
      },
      { times: 1 },
    );
    await page.reload();
    await wasCut;
    expect(handled?.status).toBe(200);
    const lost = /refresh_token=([^;]*)/.exec(handled!.setCookie)![1];
    expect(lost).not.toBe(before.value);

    // The page the reload opened presented the token the server had replaced, within its
    // grace period, and was answered as any refresh: the person is still signed in.
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.getByRole("link", { name: /rhea/ }).waitFor();
    expect(refreshes).toEqual([200]);
    expect([before.value, lost]).not.toContain((await refreshCookie()).value);

    // The session goes on: a message is answered, and the next reload refreshes as usual.
    await sendAndWait(page, "still here?");
    await page.reload();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    expect(refreshes).toEqual([200, 200]);
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
    await logInOnScreen(page, "bob");
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

