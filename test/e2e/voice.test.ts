import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, hasChromium } from "./support/chromium";
import { logInLocally, startStack, type Stack } from "./support/stack";

let refusing: Promise<Browser> | undefined;
/**
 * A Chromium that asks nobody (no fake permission prompt) and was granted nothing: it refuses
 * the microphone. One for the file. The full browser, not the headless shell the other tests
 * share: the shell's own speech recognition never answers, so it could not refuse.
 */
function refusingBrowser(): Promise<Browser> {
  refusing ??= chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--use-fake-device-for-media-stream"] });
  return refusing;
}
afterAll(async () => (await refusing)?.close());

/** Logs in where the browser refuses the microphone, and asks to dictate: the alert must say how to allow it. */
async function expectHowToAllowTheMicrophone(stack: Stack, name: string) {
  const context = await (await refusingBrowser()).newContext({ baseURL: stack.url });
  try {
    await context.route(/^https?:\/\/(?!127\.0\.0\.1|localhost)/, (route) => route.abort());
    const page = await context.newPage();
    await logInLocally(page, name);
    await voiceOn(page);
    await page.getByRole("button", { name: "Dictate a message" }).click();
    const alert = page.getByRole("alert").filter({ hasText: /microphone/i });
    await alert.waitFor();
    const text = (await alert.textContent()) ?? "";
    expect(text).toMatch(/address bar.*Microphone to Allow/);
    expect(text).not.toMatch(/not-allowed|NotAllowedError/);
  } finally {
    await context.close();
  }
}

/**
 * Voice input is a profile preference, on for a new user; this makes sure of it. (The box
 * shows disabled and unticked until the profile arrives: it is ticked once enabled.)
 */
async function voiceOn(page: Page) {
  await page.goto("/settings/profile");
  await page.getByRole("checkbox", { name: /Voice input/, disabled: false }).check();
  await page.getByRole("link", { name: "New chat" }).click();
  await page.getByRole("button", { name: "Send" }).waitFor();
}

describe.skipIf(!hasChromium)("voice input with a speech-to-text provider", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it("records the microphone, transcribes it on the server and leaves the text in the composer for review", async () => {
    stack.upstream.transcript = "water the monstera every week";
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "uma", "/settings/profile");
    await page.getByRole("checkbox", { name: /Voice input/, disabled: false }).check();
    await page.getByRole("link", { name: "New chat" }).click();
    await page.getByRole("button", { name: "Dictate a message" }).click();
    const stop = page.getByRole("button", { name: "Stop dictation" });
    await stop.waitFor();
    // Let Chromium's fake microphone (fed the espeak-ng WAV) play into the recording a while.
    await page.waitForTimeout(1500);
    await stop.click();

    const composer = page.getByRole("textbox", { name: "Message" });
    await expect.poll(() => composer.inputValue(), { timeout: 15_000 }).toBe("water the monstera every week");
    // For review: nothing was sent.
    expect(await page.getByRole("listitem", { name: "You said" }).count()).toBe(0);
    const recording = stack.upstream.transcriptions.at(-1);
    expect(recording?.file.type).toMatch(/^audio\//);
    expect(recording?.file.bytes.length).toBeGreaterThan(1000);
    await context.close();
  });

  it("says how to allow the microphone for this site when the browser refuses it (server transcription)", async () => {
    await expectHowToAllowTheMicrophone(stack, "xena");
  });
});

describe.skipIf(!hasChromium)("voice input without a provider", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ transcription: false });
  });
  afterAll(() => stack?.close());

  it("hides the microphone where the browser has no speech recognition of its own either", async () => {
    const context = await stack.newContext();
    await context.addInitScript(() => {
      delete (window as unknown as Record<string, unknown>).webkitSpeechRecognition;
      delete (window as unknown as Record<string, unknown>).SpeechRecognition;
    });
    const page = await context.newPage();
    await logInLocally(page, "vic");
    await voiceOn(page);
    await page.getByRole("button", { name: "Send" }).waitFor();
    expect(await page.getByRole("button", { name: "Dictate a message" }).count()).toBe(0);
    await context.close();
  });

  it("falls back to the browser's own speech recognition where it exists", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "wes");
    await voiceOn(page);
    expect(await page.evaluate(() => "webkitSpeechRecognition" in window || "SpeechRecognition" in window)).toBe(true);
    await page.getByRole("button", { name: "Dictate a message" }).waitFor();
    await context.close();
  });

  it("says how to allow the microphone for this site when the browser refuses it (the browser's own recognition)", async () => {
    await expectHowToAllowTheMicrophone(stack, "yuri");
  });
});
