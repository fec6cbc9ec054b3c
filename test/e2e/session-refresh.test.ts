import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { eventually, logInOnScreen, sessionTraces, startStack, type Stack } from "./support/stack";

// Sessions that renew: access tokens last 1 second here (SESSION_ACCESS_TOKEN_SECONDS), so
// they expire while a reply streams and while the person types; the client renews them
// silently (before expiry, and after a 401 with one retry) and never loses what is typed.

/** Whether the server still takes `token` (it allows a second of clock skew past its expiry). */
async function accepted(stack: Stack, token: string | undefined) {
  return (await fetch(`${stack.url}/me`, { headers: { Authorization: token ?? "" } })).status !== 401;
}

describe.skipIf(!hasChromium)("a session that renews itself", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { SESSION_ACCESS_TOKEN_SECONDS: "1" } });
  });
  afterAll(() => stack?.close());

  it("renews the access token while a reply streams, and the next message and the draft go through", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInOnScreen(page, "tess");
    // The refreshes' statuses, those after the reply began to stream, and the token it was asked with.
    const refreshes: number[] = [];
    let whileStreaming = 0;
    let streamedWith: string | undefined;
    page.on("response", (r) => {
      if (r.url().endsWith("/chat/send") && r.ok()) streamedWith ??= r.request().headers().authorization;
      if (!r.url().endsWith("/auth/refresh")) return;
      refreshes.push(r.status());
      if (streamedWith !== undefined) whileStreaming++;
    });

    // A reply that streams until the test ends it: past the token's life and its renewal.
    stack.upstream.holds = () => true;
    const atModel = new Promise<void>((resolve) => (stack.upstream.onRequest = () => resolve()));
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("tell me a long story");
    await composer.press("Enter");
    // The person types the next question while the reply streams.
    await page.getByRole("button", { name: "Stop" }).waitFor();
    await composer.fill("and then?");
    await atModel;
    stack.upstream.onRequest = undefined;
    await eventually("the reply streams", async () => streamedWith !== undefined);
    await eventually("the token the reply was asked with has expired", async () => !(await accepted(stack, streamedWith)));
    await eventually("the client renewed it while the reply streamed", async () => whileStreaming >= 1);
    // Its held part (a word at a time, after its text) has begun.
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "story more" }).waitFor();
    stack.upstream.holds = undefined;
    stack.upstream.releaseHeld();
    // The reply has ended when Stop gives way to Send (the model's stream closes after its last word).
    await page.getByRole("button", { name: "Send" }).waitFor();
    expect(await page.getByRole("listitem", { name: "Assistant replied" }).last().textContent()).toContain("echo: tell me a long story more");
    expect(refreshes.every((status) => status === 200)).toBe(true);

    expect(await composer.inputValue()).toBe("and then?");
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: and then?" }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/c\//);
    expect(await sessionTraces(page)).toEqual([]);
    await context.close();
  });

  it("renews after a 401 when the token expired before the client expected, and retries the request once", async () => {
    // This device's clock runs 20 s behind the server's: it believes a 1-second token good for
    // about 15 s longer than the server does (1 s and 1 s of tolerance), so a request in between
    // meets a 401.
    const context = await stack.newContext();
    await context.clock.install({ time: Date.now() - 20_000 });
    const page = await context.newPage();
    const seen: string[] = [];
    let issued: string | undefined;
    page.on("response", async (r) => {
      const path = new URL(r.url()).pathname;
      if (path === "/chat/send" || path === "/auth/refresh" || path === "/auth/session") seen.push(`${path} ${r.status()}`);
      // The token the page holds: the sign-in's, or a renewal's.
      if ((path === "/auth/session" || path === "/auth/refresh") && r.ok()) issued = `Bearer ${((await r.json()) as { accessToken: string }).accessToken}`;
    });
    await logInOnScreen(page, "uma");
    await eventually("the page's token has expired on the server", async () => issued !== undefined && !(await accepted(stack, issued)));
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("after the token expired");
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: after the token expired" }).waitFor();
    await eventually("the exchange seen", async () => seen.includes("/chat/send 200"));
    // A browser that never signed in has no session to restore: the page does not ask for one
    // before signing in. On a slow run the client's own renewal (due ~17 s after sign-in by its
    // clock) may come before the message: the wait above is then for the renewed token.
    expect(seen[0]).toBe("/auth/session 200");
    expect(seen.slice(-3)).toEqual(["/chat/send 401", "/auth/refresh 200", "/chat/send 200"]);
    expect(seen.slice(1, -3).every((s) => s === "/auth/refresh 200")).toBe(true);
    await context.close();
  });
  it("says the service cannot be reached when the page's refresh gets no answer, not that the person must sign in, and tries again", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInOnScreen(page, "ulla");
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.waitFor();
    const path = new URL(page.url()).pathname;

    // Offline as the page loads: no answer to its refresh.
    await page.route("**/auth/refresh", (route) => route.abort("internetdisconnected"));
    await page.reload();
    await page.getByRole("heading", { name: "Can't reach the service" }).waitFor();
    expect(await page.getByRole("alert").textContent()).toContain("Being offline does not sign you out.");
    expect(new URL(page.url()).pathname).toBe(path);

    // The server answers with an error: still not a sign-out.
    let asked = 0;
    await page.unroute("**/auth/refresh");
    await page.route("**/auth/refresh", (route) => {
      asked++;
      return route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: "unavailable", message: "down for a moment" }) });
    });
    await page.getByRole("button", { name: "Try again" }).click();
    await eventually("the retry asked again", async () => asked === 1);
    await page.getByRole("heading", { name: "Can't reach the service" }).waitFor();

    // Back: the same session, the chat where it was.
    await page.unroute("**/auth/refresh");
    await page.getByRole("button", { name: "Try again" }).click();
    await composer.waitFor();
    expect(new URL(page.url()).pathname).toBe(path);
    await context.close();
  });
});
