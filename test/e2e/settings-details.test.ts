import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

describe.skipIf(!hasChromium)("the settings' details", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  for (const [width, height] of [[1280, 800], [375, 812]] as const) {
    it(`shows every settings tab whole, with no scrollbar beside them (${width} px)`, async () => {
      const context = await stack.newContext({ width, height });
      const page = await context.newPage();
      await logInLocally(page, `xan-${width}`, "/settings/data");
      const tabs = page.getByRole("navigation", { name: "Settings sections" });
      await tabs.getByRole("link", { name: "Data" }).waitFor();
      // Nothing to scroll, so no scrollbar.
      const scrolls = await tabs.evaluate((nav) => nav.scrollWidth > nav.clientWidth || nav.scrollHeight > nav.clientHeight);
      expect(scrolls).toBe(false);
      const links = tabs.getByRole("link");
      expect(await links.allTextContents()).toEqual(["Profile", "Presets", "Sign-in", "API keys", "Usage", "Data"]);
      for (const link of await links.all()) {
        // Every letter on screen, and the tab the topmost thing at its middle.
        const whole = await link.evaluate((el) => {
          const r = el.getBoundingClientRect();
          const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          return r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight && !!at && el.contains(at);
        });
        expect(whole, (await link.textContent()) ?? "").toBe(true);
      }
      await context.close();
    });
  }

  it("names each message's conversation in Usage", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "yara");
    await sendAndWait(page, "# Repotting **plan**", "Repotting plan");
    await page.goto("/settings/usage");
    const table = page.getByRole("table");
    await table.waitFor();
    const link = table.getByRole("link", { name: "Repotting plan" });
    await link.waitFor();
    expect(await table.getByRole("link", { name: "Open" }).count()).toBe(0);
    await link.click();
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "Repotting" }).waitFor();
    await context.close();
  });

  it("saves the export under the product's name, and says in its own words that a file is not an export", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "zeno", "/settings/data");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export everything" }).click()]);
    expect(download.suggestedFilename()).toMatch(/^assistant-chat-export-\d{4}-\d\d-\d\d\.json$/);

    await importFile(page, "notes.json", JSON.stringify({ hello: "world" }));
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/neither an export of Assistant Chat nor ChatGPT's conversations\.json/);
    expect(await alert.textContent()).not.toContain("plant-chat-export");

    await importFile(page, "broken.json", "{ not json");
    await page.getByRole("alert").filter({ hasText: "This file is not JSON" }).waitFor();
    await context.close();
  });

  it("imports an export once: the same file again says its conversations are already here, and adds none", async () => {
    const token = await apiToken(stack, "yuki");
    for (const message of ["first", "second"]) {
      const sent = await fetch(`${stack.url}/chat/send`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ message }) });
      expect(sent.status).toBe(200);
    }
    const file = await (await fetch(`${stack.url}/me/export`, { headers: { Authorization: `Bearer ${token}` } })).text();

    // Into another account: both are made; then again: both skipped.
    const other = await stack.newContext();
    const there = await other.newPage();
    await logInLocally(there, "yuki-elsewhere", "/settings/data");
    await importFile(there, "export.json", file);
    await there.getByRole("status").filter({ hasText: "Imported 2 conversations." }).waitFor();
    await importFile(there, "export.json", file);
    await there.getByRole("status").filter({ hasText: "Nothing new to import. 2 conversations already here, skipped." }).waitFor();
    await there.goto("/");
    await eventually("two conversations, not four", async () => (await there.getByRole("list", { name: "Chats" }).getByRole("link").count()) === 2);
    await other.close();
  });
});

async function importFile(page: Page, name: string, text: string) {
  await page.getByLabel("File to import").setInputFiles({ name, mimeType: "application/json", buffer: Buffer.from(text) });
  await page.getByRole("button", { name: "Import", exact: true }).click();
}
