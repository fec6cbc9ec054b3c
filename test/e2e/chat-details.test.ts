import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { userIdFor } from "../../src/platform/auth/identity";
import { apiToken, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

// The small things of the chat screen a person notices: the composer's size, the model's
// line, what shows before the first word, editing with Enter, reading a reply aloud, how
// tables and formulas look, and what the page asks the server for.

const composer = (page: Page) => page.getByRole("textbox", { name: "Message" });
const lastReply = (page: Page) => page.getByRole("listitem", { name: "Assistant replied" }).last();
const height = async (page: Page) => (await composer(page).boundingBox())!.height;

/**
 * A speech engine standing in for the system's (headless Chromium has no voices): it keeps
 * what it is asked to say, starts at once and ends when the test says so.
 */
async function fakeSpeech(context: BrowserContext) {
  await context.addInitScript(() => {
    const queue: SpeechSynthesisUtterance[] = [];
    const said: Array<{ text: string; lang: string }> = [];
    const fire = (u: SpeechSynthesisUtterance, type: string, extra = {}) => u.dispatchEvent(Object.assign(new Event(type), { utterance: u, ...extra }));
    const engine = {
      speaking: false,
      pending: false,
      paused: false,
      speak(u: SpeechSynthesisUtterance) {
        said.push({ text: u.text, lang: u.lang });
        queue.push(u);
        engine.speaking = true;
        fire(u, "start");
      },
      cancel() {
        for (const u of queue.splice(0)) fire(u, "error", { error: "interrupted" });
        engine.speaking = false;
      },
      pause() {},
      resume() {},
      getVoices: () => [],
      addEventListener() {},
      removeEventListener() {},
    };
    Object.defineProperty(window, "speechSynthesis", { value: engine, configurable: true });
    Object.assign(window, {
      __said: said,
      __finishSpeaking: () => {
        for (const u of queue.splice(0)) fire(u, "end");
        engine.speaking = false;
      },
    });
  });
}

describe.skipIf(!hasChromium)("the chat's details", () => {
  let stack: Stack;
  beforeAll(async () => {
    // Together's model has the longest name of the catalog: "Llama 3.3 70B Turbo (Together)".
    // The service's own model named as its operator says (SVC_MODEL_NAME): what it really serves.
    // Ada is an admin (ADMINS names her account, whose id a local name derives).
    const ada = await userIdFor("local-login", "local:ada-admin");
    stack = await startStack({ env: (upstream) => ({ TOGETHER_BASE_URL: upstream.baseUrl, TOGETHER_API_KEY: "test-key", SVC_MODEL_NAME: "Qwen 2.5 7B", ADMINS: ada }) });
  });
  afterEach(() => {
    stack.upstream.mode = "ok";
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  it("shrinks the composer back to one line once a long message is sent", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "nils");
    const empty = await height(page);
    await composer(page).fill("one\ntwo\nthree\nfour\nfive\nsix");
    expect(await height(page)).toBeGreaterThan(empty + 60);
    await composer(page).press("Enter");
    await lastReply(page).filter({ hasText: "echo: one" }).waitFor();
    await expect.poll(() => height(page)).toBeLessThanOrEqual(empty + 1);
    await context.close();
  });

  it("sends an edited message with Enter, as the composer says, and adds a line with Shift+Enter", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "oona");
    await sendAndWait(page, "water the fern");
    await page.getByRole("button", { name: "Edit message" }).click();
    const editor = page.getByRole("textbox", { name: "Edit your message" });
    await editor.fill("water the fern");
    await editor.press("Shift+Enter");
    await editor.pressSequentially("twice");
    expect(await editor.inputValue()).toBe("water the fern\ntwice");
    await editor.press("Enter");
    await lastReply(page).filter({ hasText: "echo: water the fern" }).filter({ hasText: "twice" }).waitFor();
    expect(await page.getByRole("listitem", { name: "You said" }).last().getByText("water the fern\ntwice").count()).toBe(1);
    expect(await editor.count()).toBe(0);
    await context.close();
  });

  it("shows an admin the models that cannot answer, greyed, each with what to set, and nobody else", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "ada-admin");
    const picker = page.getByRole("combobox", { name: "Model" });
    const claude = picker.getByRole("option", { name: "Claude Sonnet 4 · unavailable: set ANTHROPIC_API_KEY" });
    await claude.waitFor({ state: "attached" });
    expect(await claude.isDisabled()).toBe(true);
    expect(await picker.getByRole("option", { name: "GPT-4o · unavailable: set OPENAI_API_KEY" }).isDisabled()).toBe(true);
    // In a group of their own, saying whom it is for (a closed select's groups are not in its accessibility tree).
    expect(await claude.evaluate((el) => (el.parentElement as HTMLOptGroupElement).label)).toBe("Not configured here (shown to admins)");
    // Greyed: the browser's colour for a disabled option, not the enabled ones'.
    const colour = (option: ReturnType<Page["getByRole"]>) => option.evaluate((el) => getComputedStyle(el).color);
    expect(await colour(claude)).not.toBe(await colour(picker.getByRole("option", { name: /^Qwen 2.5 7B · / })));
    // What can answer is listed as for everyone, above them.
    expect(await picker.getByRole("option", { name: /^Qwen 2.5 7B · / }).isDisabled()).toBe(false);
    await context.close();

    const other = await stack.newContext();
    const someone = await other.newPage();
    await logInLocally(someone, "not-an-admin");
    await someone.getByText(/credits? a message/).waitFor({ state: "attached" });
    const options = await someone.getByRole("combobox", { name: "Model" }).getByRole("option").allTextContents();
    expect(options.some((o) => o.startsWith("Qwen 2.5 7B"))).toBe(true);
    expect(options.filter((o) => /unavailable|ANTHROPIC/.test(o))).toEqual([]);
    await other.close();
  });

  for (const [width, height] of [[1280, 800], [375, 812]] as const) {
    it(`keeps Instructions beside the model, whatever its name and line, and lists only models that can answer (${width} px)`, async () => {
      const context = await stack.newContext({ width, height });
      const page = await context.newPage();
      await logInLocally(page, `pia-${width}`);
      const picker = page.getByRole("combobox", { name: "Model" });
      await page.getByText(/credits? a message/).waitFor({ state: "attached" }); // the list has arrived
      const options = await picker.getByRole("option").allTextContents();
      expect(options.length).toBeGreaterThan(1);
      expect(options.filter((o) => /unavailable/.test(o))).toEqual([]);
      for (const model of width > 800 ? ["svc-70b", "llama-3.3-70b-turbo"] : ["svc-70b"]) {
        await picker.selectOption(model);
        const instructions = page.getByRole("button", { name: "Instructions" });
        // The select lies over the chip that shows the model's name: the same box.
        const chip = (await picker.boundingBox())!;
        const button = (await instructions.boundingBox())!;
        // On the model's row, to its right, and whole inside the composer.
        expect(Math.abs(button.y + button.height / 2 - (chip.y + chip.height / 2)), model).toBeLessThan(4);
        expect(button.x).toBeGreaterThan(chip.x + chip.width);
        const form = (await page.locator("form").filter({ has: picker }).boundingBox())!;
        expect(button.x + button.width).toBeLessThanOrEqual(form.x + form.width);
      }
      await picker.selectOption("svc-70b");
      // The line is the picker's description (a screen reader hears it); its tooltip, the whole sentence.
      const line = await picker.evaluate((el) => {
        const hint = document.getElementById(el.getAttribute("aria-describedby") ?? "");
        return { text: hint?.textContent, title: hint?.title };
      });
      expect(line.text).toMatch(/^(\d+ tok\/s · (first word in .+ · )?|\w+ speed · not measured yet · )1 credit a message$/);
      expect(line.title).toMatch(/(over its last \d+ replies here|\(not measured here yet\)); 1 credit a message/);
      await context.close();
    });
  }

  // The other files' contexts ask for reduced motion (stack.ts): here, both kinds of person.
  for (const motion of ["no-preference", "reduce"] as const) {
    it(`shows that a reply is being written before its first word: dots that ${motion === "reduce" ? "stand still for a person who asked for less motion" : "pulse"}`, async () => {
      const context = await stack.newContext({ motion });
      const page = await context.newPage();
      await logInLocally(page, `quin-${motion}`);
      stack.upstream.mode = "slow";
      await composer(page).fill("are you there?");
      await composer(page).press("Enter");
      const writing = page.getByRole("status").filter({ hasText: "The assistant is writing a reply" });
      await writing.waitFor();
      // Dots a person sees, not the "…" text of before.
      expect((await writing.boundingBox())!.width).toBeGreaterThan(20);
      expect(await lastReply(page).textContent()).not.toContain("…");
      // The animations running on the dots, as the browser plays them.
      const running = await writing.evaluate((status) =>
        status.getAnimations({ subtree: true }).map((a) => `${(a as CSSAnimation).animationName} ${a.playState}`),
      );
      expect(running).toEqual(motion === "reduce" ? [] : ["writing running", "writing running", "writing running"]);
      await page.getByRole("button", { name: "Stop" }).click();
      await writing.waitFor({ state: "detached" });
      await context.close();
    });
  }

  it("reads a reply aloud in the profile's language, its words without Markdown or code, and stops on request", async () => {
    const context = await stack.newContext();
    await fakeSpeech(context);
    const page = await context.newPage();
    await logInLocally(page, "rhea");
    const token = await apiToken(stack, "rhea");
    await page.evaluate((token) => fetch("/me", { method: "PATCH", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ preferences: { language: "en-GB" } }) }), token);
    await page.reload();
    await composer(page).waitFor();
    stack.upstream.reply = () => "Ferns like **shade**.\n\n```js\nwater(fern)\n```\n\nWater them `weekly`.";
    await sendAndWait(page, "fern care", "Ferns like shade.");
    const reply = lastReply(page);
    await reply.getByRole("button", { name: "Read aloud" }).click();
    await reply.getByRole("button", { name: "Stop reading" }).waitFor();
    const said = await page.evaluate(() => (window as unknown as { __said: Array<{ text: string; lang: string }> }).__said);
    const text = said.map((s) => s.text).join(" ");
    expect(text).toContain("Ferns like shade.");
    expect(text).toContain("Water them weekly.");
    expect(text).not.toMatch(/\*\*|`|water\(fern\)/);
    expect(said.every((s) => s.lang === "en-GB")).toBe(true);
    await page.evaluate(() => (window as unknown as { __finishSpeaking: () => void }).__finishSpeaking());
    await reply.getByRole("button", { name: "Read aloud" }).waitFor();

    // Stop, before the end.
    await reply.getByRole("button", { name: "Read aloud" }).click();
    await reply.getByRole("button", { name: "Stop reading" }).click();
    await reply.getByRole("button", { name: "Read aloud" }).waitFor();
    expect(await page.evaluate(() => window.speechSynthesis.speaking)).toBe(false);
    await context.close();
  });

  it("shows a table's header as a header, a display formula centred, and leaves a message of yours unshaded under the pointer", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "saul");
    stack.upstream.reply = () => "| Plant | Water |\n|---|---|\n| Fern | weekly |\n\n$$W = \\sum_{i=1}^{n} w_i$$\n\nDone.";
    await sendAndWait(page, "a table and a sum", "Done.");
    const reply = lastReply(page);
    // The stored reply (its controls are there), not the one that streamed, which it replaces.
    await reply.getByRole("button", { name: "Good reply" }).waitFor();
    const cells = await reply.evaluate((li) => {
      const style = (el: Element) => getComputedStyle(el);
      const th = style(li.querySelector("th")!);
      const td = style(li.querySelector("td")!);
      return { thWeight: Number(th.fontWeight), tdWeight: Number(td.fontWeight), thColor: th.color, tdColor: td.color, thBackground: th.backgroundColor, tdBackground: td.backgroundColor };
    });
    expect(cells.thWeight).toBeGreaterThanOrEqual(600);
    expect(cells.tdWeight).toBeLessThan(600);
    expect(cells.thColor).toBe(cells.tdColor); // the text's colour, not the muted one
    expect(cells.thBackground).not.toBe(cells.tdBackground);

    const formula = reply.locator('math[display="block"]');
    await formula.waitFor();
    const placed = await formula.evaluate((math) => {
      const range = document.createRange();
      range.selectNodeContents(math);
      const ink = range.getBoundingClientRect();
      const box = math.closest(".reply")!.getBoundingClientRect();
      const sizes = [...math.querySelectorAll("mi, mn, mo")].map((el) => parseFloat(getComputedStyle(el).fontSize));
      return { left: ink.left - box.left, right: box.right - ink.right, smallest: Math.min(...sizes) };
    });
    expect(Math.abs(placed.left - placed.right)).toBeLessThan(4);
    expect(placed.smallest).toBeGreaterThanOrEqual(12); // the ∑'s limits too

    const mine = page.getByRole("listitem", { name: "You said" }).last();
    await mine.hover();
    expect(await mine.evaluate((li) => getComputedStyle(li).backgroundColor)).toBe("rgba(0, 0, 0, 0)");
    await context.close();
  });

  it("asks for the profile once per load, and gets the models gzipped", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "tove");
    // What the signed-in page asked for is in (the load state "networkidle" was reached at the
    // login screen already, so it would not wait): the model line needs /models, the link /me.
    await page.getByText(/credits? a message/).waitFor();
    await page.getByRole("link", { name: /tove/ }).waitFor();
    const profileReads: string[] = [];
    const models: Array<Record<string, string>> = [];
    page.on("request", (r) => r.method() === "GET" && new URL(r.url()).pathname === "/me" && profileReads.push(r.url()));
    page.on("response", (r) => new URL(r.url()).pathname === "/models" && models.push(r.headers()));
    await page.reload();
    await page.getByText(/credits? a message/).waitFor();
    await page.getByRole("link", { name: /tove/ }).waitFor();
    await page.waitForLoadState("networkidle");
    expect(profileReads).toHaveLength(1);
    expect(models).toHaveLength(1);
    expect(models[0]!["content-encoding"]).toBe("gzip");
    await context.close();
  });
  it("opens a conversation at its newest reply, once its replies are rendered", async () => {
    const token = await apiToken(stack, "opal");
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    let contextId: string | undefined;
    for (let i = 1; i <= 6; i++) {
      stack.upstream.reply = () => `Reply ${i}: ${"a long line about ferns and their water. ".repeat(12)}\n\n\`\`\`js\nconsole.log(${i});\n\`\`\``;
      const sent = await fetch(`${stack.url}/chat/send`, { method: "POST", headers, body: JSON.stringify({ message: `question ${i}`, ...(contextId ? { contextId } : {}) }) });
      contextId = ((await sent.json()) as { contextId: string }).contextId;
    }
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.setViewportSize({ width: 375, height: 812 });
    await logInLocally(page, "opal", `/c/${contextId}`);
    const newest = lastReply(page).getByText("console.log(6);");
    await newest.waitFor();
    await expect
      .poll(() => newest.evaluate((el) => {
        const r = el.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= innerHeight;
      }))
      .toBe(true);
    await context.close();
  });
  it("names the service's model as its operator does (SVC_MODEL_NAME)", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "quinn");
    await page.getByText(/credits? a message/).waitFor({ state: "attached" }); // the list has arrived
    const options = await page.getByRole("combobox", { name: "Model" }).getByRole("option").allTextContents();
    expect(options.some((o) => o.startsWith("Qwen 2.5 7B · "))).toBe(true);
    expect(options.some((o) => o.startsWith("Service 70B"))).toBe(false);
    await context.close();
  });
});
