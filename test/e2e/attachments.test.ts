import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { png } from "../support/files";
import { hasChromium } from "./support/chromium";
import { eventually, logInLocally, startStack, type Stack } from "./support/stack";

// Attaching images in the composer: by the file picker and by pasting, their chips, the
// thumbnail in the sent message, and the larger view it opens.

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

describe.skipIf(!hasChromium)("attachments in the composer", () => {
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
});
