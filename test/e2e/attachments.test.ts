import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pdf, png } from "../support/files";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, startStack, type Stack } from "./support/stack";

// Attaching files in the composer: by the file picker, by pasting and by dropping them on
// it, their chips, the thumbnail in the sent message and the larger view it opens, a
// document's chip; and a shared conversation's files as anyone opening its link sees them.

async function sendWith(page: Page, text: string) {
  await page.getByRole("status").filter({ hasText: /: attached$/ }).first().waitFor({ state: "attached" });
  const composer = page.getByRole("textbox", { name: "Message" });
  await composer.fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

async function thumbnailLoaded(page: Page, name: string): Promise<boolean> {
  const image = page.getByRole("listitem", { name: "You said" }).getByRole("img", { name });
  return (await image.count()) > 0 && (await image.last().evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0));
}

describe.skipIf(!hasChromium)("attachments in the web client", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: (up) => ({ MODELS: JSON.stringify([{ id: "vision", name: "Vision", protocol: "openai", baseUrl: up.baseUrl, images: true, default: true }]) }),
    });
  });
  afterAll(() => stack?.close());

  it("attaches an image with the file picker and shows its thumbnail in the sent message, which opens larger", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "picker");
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Attach files" }).click();
    await (await chooser).setFiles({ name: "leaf.png", mimeType: "image/png", buffer: Buffer.from(png()) });
    await page.getByRole("button", { name: "Remove leaf.png" }).waitFor();
    await sendWith(page, "What plant is this?");
    await eventually("the sent message shows the image", () => thumbnailLoaded(page, "leaf.png"));
    expect(await page.getByRole("button", { name: "Remove leaf.png" }).count()).toBe(0);
    expect(JSON.stringify(stack.upstream.requests.at(-1)?.body.messages.at(-1)?.content)).toContain("data:image/png;base64,");

    await page.getByRole("button", { name: "Open image leaf.png" }).click();
    const dialog = page.getByRole("dialog", { name: "leaf.png" });
    await dialog.getByRole("img", { name: "leaf.png" }).waitFor();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    await context.close();
  });

  it("attaches a pasted image", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "paster");
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.focus();
    await composer.evaluate((el, bytes) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], "pasted.png", { type: "image/png" }));
      el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, [...png()]);
    await page.getByRole("button", { name: "Remove pasted.png" }).waitFor();
    await sendWith(page, "And this one?");
    await eventually("the sent message shows the pasted image", () => thumbnailLoaded(page, "pasted.png"));
    await context.close();
  });

  it("attaches an image and a PDF dropped on the composer, and the sent message shows the thumbnail and the document's name and pages", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "dropper");
    // What a file manager hands the page when files are dragged onto it: a DataTransfer with files.
    const dataTransfer = await page.evaluateHandle(
      ({ image, document }) => {
        const data = new DataTransfer();
        data.items.add(new File([new Uint8Array(image)], "dropped.png", { type: "image/png" }));
        data.items.add(new File([new Uint8Array(document)], "care.pdf", { type: "application/pdf" }));
        return data;
      },
      { image: [...png()], document: [...pdf(["Water the fern weekly.", "Mist it daily."])] },
    );
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.dispatchEvent("dragover", { dataTransfer });
    await composer.dispatchEvent("drop", { dataTransfer });
    for (const name of ["dropped.png", "care.pdf"]) {
      await page.getByRole("status").filter({ hasText: `${name}: attached` }).waitFor({ state: "attached" });
    }
    await composer.fill("What do these say?");
    await page.getByRole("button", { name: "Send" }).click();

    await eventually("the sent message shows the dropped image", () => thumbnailLoaded(page, "dropped.png"));
    const sent = page.getByRole("listitem", { name: "You said" }).last();
    expect(await sent.getByRole("img", { name: "dropped.png" }).isVisible()).toBe(true);
    const chip = sent.getByRole("list", { name: "Attachments" }).getByRole("listitem").filter({ hasText: "care.pdf" });
    expect(await chip.isVisible()).toBe(true);
    expect(await chip.textContent()).toMatch(/^care\.pdf\s*PDF · 2 pages · \d+ (B|KB)$/);
    expect(await page.getByRole("button", { name: "Remove care.pdf" }).count()).toBe(0);
    expect(JSON.stringify(stack.upstream.requests.at(-1)?.body.messages.at(-1)?.content)).toContain("Mist it daily.");
    await context.close();
  });

  it("shows a shared conversation's image and document chip on its share page, to anyone with the link", async () => {
    const token = await apiToken(stack, "sharer");
    const upload = async (bytes: Uint8Array<ArrayBuffer>, name: string) => {
      const form = new FormData();
      form.set("file", new Blob([bytes]), name);
      const res = await fetch(`${stack.url}/attachments`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: form });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const ids = [await upload(png(), "fern.png"), await upload(pdf(["Repot in spring.", "Feed in summer.", "Rest in winter."]), "seasons.pdf")];
    const json = { "Content-Type": "application/json", Authorization: `Bearer ${token}` };
    const sent = await fetch(`${stack.url}/chat/send`, { method: "POST", headers: json, body: JSON.stringify({ message: "My fern and its calendar", attachments: ids }) });
    expect(sent.status).toBe(200);
    const { contextId } = (await sent.json()) as { contextId: string };
    const share = (await (await fetch(`${stack.url}/contexts/${contextId}/share`, { method: "POST", headers: json, body: "{}" })).json()) as { url: string };

    // A stranger's browser: no session, only the link.
    const context = await stack.newContext();
    const reader = await context.newPage();
    await reader.goto(new URL(share.url).pathname);
    const asked = reader.getByRole("listitem", { name: "User said" });
    await asked.getByText("My fern and its calendar").waitFor();
    const image = asked.getByRole("img", { name: "fern.png" });
    await eventually("the shared image is shown", async () => (await image.isVisible()) && (await image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)));
    expect(await asked.getByRole("link", { name: "Open image fern.png" }).isVisible()).toBe(true);
    const chip = asked.getByRole("link", { name: /seasons\.pdf/ });
    expect(await chip.isVisible()).toBe(true);
    expect(await chip.textContent()).toMatch(/seasons\.pdf\s*PDF · 3 pages/);
    expect(await chip.getAttribute("href")).toMatch(/\/attachments\/att_[\w-]+\?download=1$/);
    await context.close();
  });
});
