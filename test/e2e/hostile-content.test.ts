import { createClient } from "@libsql/client";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

// Rendering never blanks a page (issue 24). The attack: a reply (or an imported message) of
// "> " × 2,000, or "*" × 5,000 + "a" + "*" × 5,000, made the Markdown renderer overflow its
// stack: the conversation view went empty, the person's own messages too, and the share page
// showed only the title. A 9 MB reply (a list nested 3,000 deep) was stored whole and hung
// the tab. Here the real client in Chromium is fed those payloads.

const QUOTES = "> ".repeat(2000);
const STARS = `${"*".repeat(5000)}a${"*".repeat(5000)}`;
/** A list nested `depth` deep, as a model can be made to write: 3,000 deep is 9 MB. */
const nestedList = (depth: number) => Array.from({ length: depth }, (_, i) => `${"  ".repeat(i)}- item ${i}`).join("\n");

const replies = (page: Page) => page.getByRole("listitem", { name: "Assistant replied" });
/** The person's own messages: "You said" in the chat, "User said" on a share page. */
const asked = (page: Page) => page.getByRole("listitem", { name: /^(You|User) said$/ });

/** A ChatGPT conversations.json conversation of question and answer pairs. */
function conversation(title: string, pairs: Array<[string, string]>) {
  const mapping: Record<string, unknown> = { root: { id: "root", message: null, parent: null, children: ["q0"] } };
  let parent = "root";
  pairs.forEach(([question, answer], i) => {
    const node = (id: string, role: string, text: string, next?: string) => {
      mapping[id] = {
        id,
        message: { id, author: { role }, create_time: 1_763_800_000 + i * 10 + (role === "user" ? 0 : 5), content: { content_type: "text", parts: [text] } },
        parent,
        children: next ? [next] : [],
      };
      parent = id;
    };
    node(`q${i}`, "user", question, `a${i}`);
    node(`a${i}`, "assistant", answer, i + 1 < pairs.length ? `q${i + 1}` : undefined);
  });
  return { title, create_time: 1_763_800_000, update_time: 1_763_800_100, mapping, current_node: parent };
}

describe.skipIf(!hasChromium)("a message the renderer cannot take", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterEach(() => {
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  it("is shown as plain text, alone: every other message of the conversation, and of its share page, renders", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await logInLocally(page, "rita");
    stack.upstream.reply = () => "A **bold** start.";
    await sendAndWait(page, "say something bold", "A bold start.");
    stack.upstream.reply = () => QUOTES;
    await sendAndWait(page, "quote yourself", "> > > > >");
    stack.upstream.reply = () => STARS;
    await sendAndWait(page, "emphasise", "*****a*****");

    expect(await asked(page).count()).toBe(3);
    expect(await replies(page).count()).toBe(3);
    expect(await replies(page).first().locator("strong").textContent()).toBe("bold");
    for (const i of [1, 2]) {
      const reply = replies(page).nth(i);
      expect(await reply.getByText(/^Shown as plain text: /).isVisible()).toBe(true);
    }
    expect((await replies(page).nth(1).textContent())?.length).toBeGreaterThan(4000);

    // The share page, as anyone opens it.
    const contextId = new URL(page.url()).pathname.split("/").at(-1)!;
    const token = await apiToken(stack, "rita");
    const share = (await (await fetch(`${stack.url}/contexts/${contextId}/share`, { method: "POST", headers: { Authorization: `Bearer ${token}` } })).json()) as { url: string };
    const reader = await (await stack.newContext()).newPage();
    await reader.goto(new URL(share.url).pathname);
    await reader.getByRole("list", { name: "Conversation" }).waitFor();
    expect(await asked(reader).count()).toBe(3);
    expect(await replies(reader).count()).toBe(3);
    expect(await replies(reader).first().locator("strong").textContent()).toBe("bold");
    expect(await reader.getByText(/^Shown as plain text: /).count()).toBe(2);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("imported, renders the same; a 9 MB message stored before the cap, and a reply cut at it, render in parts without freezing the tab", async () => {
    const token = await apiToken(stack, "sam");
    const file = [
      conversation("Hostile answers", [
        ["hello", "Plain *hello* back."],
        ["quote", QUOTES],
        ["stars", STARS],
        ["long", "LONG-PLACEHOLDER"],
      ]),
    ];
    const imported = await fetch(`${stack.url}/contexts/import`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(file) });
    expect(imported.status).toBe(201);
    const { items } = (await imported.json()) as { items: Array<{ id: string }> };
    // A 9 MB reply as a server before MAX_REPLY_CHARS stored it, written into the database.
    const db = createClient({ url: stack.server.databaseUrl });
    // The server writes too (it indexes the import for search): wait for its lock as it does.
    await db.execute("pragma busy_timeout = 5000");
    const huge = nestedList(3000);
    expect(huge.length).toBeGreaterThan(9_000_000);
    await db.execute({ sql: "update messages set content = ? where content = 'LONG-PLACEHOLDER'", args: [huge] });
    db.close();

    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "sam", `/c/${items[0]!.id}`);
    const more = page.getByRole("button", { name: /^Show more \([\d,]+ characters left\)$/ });
    await more.waitFor({ timeout: 20_000 });
    // The tab answers at once: its main thread is not stuck in the renderer.
    const started = Date.now();
    await page.evaluate(() => document.title);
    expect(Date.now() - started).toBeLessThan(1000);
    // The conversation is shown from its end, the exchanges above it a task or more later.
    await expect.poll(() => asked(page).count()).toBe(4);
    expect(await replies(page).first().locator("em").textContent()).toBe("hello");
    await expect.poll(() => page.getByText(/^Shown as plain text: /).count()).toBe(3);
    await more.click();
    await page.getByText("- item 150").first().waitFor();

    // A reply that long from the model is cut at MAX_REPLY_CHARS (200,000) and shown the same way.
    stack.upstream.reply = () => nestedList(500);
    await page.getByRole("link", { name: "New chat" }).click();
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("nest deeply");
    await composer.press("Enter");
    const last = replies(page).last();
    const moreOfLast = last.getByRole("button", { name: /^Show more/ });
    await moreOfLast.waitFor();
    await page.getByRole("button", { name: "Send" }).waitFor();
    // As stored (the streamed reply is replaced by the stored one, shown from its first part).
    await page.reload();
    await moreOfLast.waitFor();
    for (let part = 2; await moreOfLast.isVisible(); part++) {
      expect(part).toBeLessThanOrEqual(11);
      await moreOfLast.click();
    }
    await last.getByText("[This reply was cut here: it reached the longest reply this service keeps, 200,000 characters.]").waitFor();
    await context.close();
  }, 120_000);
});
