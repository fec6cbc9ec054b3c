import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium";
import { afterNextPaint, apiToken, eventually, logInLocally, sendAndWait, startStack, type Stack } from "./support/stack";

const counter = (page: Page) => page.getByRole("status", { name: /^Credits:/ });
const creditsLeft = async (page: Page) => Number(/Credits: (\d+) of/.exec((await counter(page).getAttribute("aria-label")) ?? "")?.[1]);

describe.skipIf(!hasChromium)("chatting", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ dailyCredits: 500 });
  });
  afterEach(() => {
    stack.upstream.mode = "ok";
    stack.upstream.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });
  afterAll(() => stack?.close());

  it("sends with Enter (Shift+Enter is a new line), renders Markdown with code blocks and counts the credit", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const keys: string[] = [];
    page.on("request", (r) => r.url().endsWith("/chat/send") && keys.push(r.headers()["idempotency-key"] ?? ""));
    await logInLocally(page, "carol");
    await eventually("the counter shows the full allowance", async () => (await creditsLeft(page)) === 500);

    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("line one");
    await composer.press("Shift+Enter");
    await composer.pressSequentially("line two");
    expect(await composer.inputValue()).toBe("line one\nline two");
    expect(keys).toHaveLength(0);

    stack.upstream.reply = () => "Water it **weekly**.\n\n```js\nconsole.log('drip');\n```";
    await composer.press("Enter");
    const reply = page.getByRole("listitem", { name: "Assistant replied" }).last();
    await reply.getByRole("code").filter({ hasText: "console.log('drip');" }).waitFor();
    expect(await reply.getByText("weekly").evaluate((el) => el.tagName)).toBe("STRONG");
    await reply.getByRole("button", { name: "Copy code" }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe("console.log('drip');\n");
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "line one\nline two" }).waitFor();

    // The first message created the conversation, and the address follows it.
    await eventually("the URL names the new conversation", async () => /^\/c\/.+/.test(new URL(page.url()).pathname));
    await eventually("the counter went down by one", async () => (await creditsLeft(page)) === 499);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^[\x21-\x7e]{8,}$/);
    await context.close();
  });

  it("streams the reply as it comes, and stop keeps what it wrote at the price of a message, which the counter shows", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "dave");
    await sendAndWait(page, "warm up");
    await eventually("one credit used", async () => (await creditsLeft(page)) === 499);

    // The upstream sends its first words, then stalls: those words are on screen before the end.
    stack.upstream.mode = "stall-mid-stream";
    stack.upstream.reply = () => "Monsteras like bright indirect light and weekly water.";
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("how do I care for a monstera?");
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "Monsteras like" }).waitFor();
    const stop = page.getByRole("button", { name: "Stop" });
    expect(await stop.isVisible()).toBe(true);
    await eventually("the held credit shows", async () => (await creditsLeft(page)) === 498);

    await stop.click();
    await page.getByText("Stopped. What was written so far is kept; regenerate it for a whole reply.").waitFor();
    await page.getByRole("button", { name: "Send" }).waitFor();
    expect(await creditsLeft(page)).toBe(498);
    await context.close();
  });

  it("shows the count after the first reply even when the page's first count arrives later", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    // The count the page asks for on opening is answered only after the first reply is on
    // screen, as on a slow connection: computed before the message, it must not win.
    let replied!: () => void;
    const firstReply = new Promise<void>((resolve) => (replied = resolve));
    let held = 0;
    await page.route("**/credits", async (route) => {
      if (held++ === 0) {
        const response = await route.fetch();
        await firstReply;
        await route.fulfill({ response });
      } else await route.continue();
    });
    await logInLocally(page, "fay");
    await sendAndWait(page, "am I counted?");
    const late = page.waitForResponse((r) => r.url().endsWith("/credits"));
    replied();
    // The page has read that late answer and drawn what it makes of it before the counter is read.
    await (await late).finished();
    await afterNextPaint(page);
    await eventually("the counter shows the message", async () => (await creditsLeft(page)) === 499);
    await context.close();
  });

  it("says in words when the model fails, charges nothing, keeps the message and retries on request", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "erin");
    await eventually("full allowance", async () => (await creditsLeft(page)) === 500);
    stack.upstream.mode = "fail";
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("are you there?");
    await composer.press("Enter");
    await page.getByRole("alert").filter({ hasText: "The model failed to answer. Nothing was charged." }).waitFor();
    // The message is kept in the conversation (stored before the model answered), with the
    // reply that failed under it; the composer is free.
    await page.getByRole("listitem", { name: "You said" }).filter({ hasText: "are you there?" }).waitFor();
    await page.getByText(/^The model stopped answering here/).waitFor();
    expect(await composer.inputValue()).toBe("");
    await eventually("refunded", async () => (await creditsLeft(page)) === 500);

    stack.upstream.mode = "ok";
    await page.getByRole("button", { name: "Retry" }).click();
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: are you there?" }).waitFor();
    await eventually("charged once", async () => (await creditsLeft(page)) === 499);
    expect(await page.getByRole("listitem", { name: "You said" }).count()).toBe(1);
    await context.close();
  });

  it("offers no Send for a model this server cannot call, says why, and sends once another is chosen", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "ezra");
    // The default model chosen on another device is one this server has no provider for.
    const token = await apiToken(stack, "ezra");
    await page.evaluate(
      (token) =>
        fetch("/me", {
          method: "PATCH",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ preferences: { defaultModel: "gpt-4o" } }),
        }),
      token,
    );
    await page.reload();
    const picker = page.getByRole("combobox", { name: "Model" });
    await expect.poll(() => picker.inputValue()).toBe("gpt-4o");
    await eventually("the counter shows the full allowance", async () => (await creditsLeft(page)) === 500);
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("hello?");
    await page.getByRole("status").filter({ hasText: "GPT-4o is not available on this server (its provider is not configured). Choose another model." }).waitFor();
    expect(await page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
    await composer.press("Enter");
    expect(await composer.inputValue()).toBe("hello?"); // nothing was sent
    expect(await creditsLeft(page)).toBe(500);

    await picker.selectOption("svc-70b");
    expect(await page.getByRole("button", { name: "Send" }).isEnabled()).toBe(true);
    await composer.press("Enter");
    await page.getByRole("listitem", { name: "Assistant replied" }).filter({ hasText: "echo: hello?" }).waitFor();
    await context.close();
  });

  it("lists the models that can answer with speed and price, and shows the measured speed", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "fay");
    const picker = page.getByRole("combobox", { name: "Model" });
    await page.getByText(/credits? a message/).waitFor(); // the list has arrived
    const options = await picker.getByRole("option").allTextContents();
    expect(options.some((o) => /fast|medium|slow|tok\/s/.test(o) && /\d+ cr/.test(o))).toBe(true);
    // Models whose provider is not configured here are not offered (chat-details.test.ts).
    expect(options.some((o) => o.includes("unavailable"))).toBe(false);
    // After a few replies the picker shows svc-70b's speed as measured on this server.
    for (const text of ["one", "two", "three"]) await sendAndWait(page, text);
    // The server reads the measured speeds again at most every 10 s (GET /models' cache,
    // shared by everyone): waits for its answer to carry a measured rate, then reloads.
    await expect
      .poll(
        async () => {
          const models = (await (await fetch(`${stack.url}/models`)).json()) as Array<{ id: string; measured: { tokensPerSecond: number | null } }>;
          return models.find((m) => m.id === "svc-70b")?.measured.tokensPerSecond ?? null;
        },
        { interval: 250 },
      )
      .not.toBeNull();
    await page.reload();
    await page.getByText(/^\d+ tok\/s · (first word in .+ · )?1 credit a message$/).waitFor();
    const measured = (await picker.getByRole("option").allTextContents()).find((o) => o.startsWith("Service 70B"));
    expect(measured).toMatch(/^Service 70B · \d+ tok\/s · 1 cr$/);
    await context.close();
  });

  it("runs nothing from a reply carrying HTML and a javascript: link", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await logInLocally(page, "gus");
    const attack =
      'Look: <img src=x onerror="window.__pwned=1;alert(1)"> <script>window.__pwned=2</script> ' +
      "[click me](javascript:window.__pwned=3) <a href=\"javascript:window.__pwned=4\">or me</a>";
    stack.upstream.reply = () => attack;
    await sendAndWait(page, "say something nasty", "Look:");
    const reply = page.getByRole("listitem", { name: "Assistant replied" }).last();
    await reply.getByText("click me").click();
    await reply.getByText("or me").click();
    const hrefs = await reply.getByRole("link").evaluateAll((links) => links.map((a) => a.getAttribute("href")));
    expect(hrefs.some((h) => h?.startsWith("javascript:"))).toBe(false);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    // The shared page renders the same text through the same sanitiser.
    await context.close();
  });
});

describe.skipIf(!hasChromium)("the model picker", () => {
  let stack: Stack;
  beforeAll(async () => {
    // Together's model has the longest name of the catalog: "Llama 3.3 70B Turbo (Together)".
    stack = await startStack({ env: (upstream) => ({ TOGETHER_BASE_URL: upstream.baseUrl, TOGETHER_API_KEY: "test-key" }) });
  });
  afterAll(() => stack?.close());

  for (const [width, height] of [[1280, 800], [375, 740]] as const) {
    it(`shows the chosen model's whole name, the longest too (${width} px)`, async () => {
      const context = await stack.newContext({ width, height });
      const page = await context.newPage();
      await logInLocally(page, `zoe-${width}`);
      const picker = page.getByRole("combobox", { name: "Model" });
      const composer = await page.locator("form").filter({ has: picker }).boundingBox();
      for (const [id, name] of [["svc-70b", "Service 70B"], ["llama-3.3-70b-turbo", "Llama 3.3 70B Turbo (Together)"]] as const) {
        await picker.selectOption(id);
        const shown = page.getByText(name, { exact: true });
        await shown.waitFor();
        // Every letter on screen, inside the composer, not clipped and not under anything.
        const whole = await shown.evaluate((el) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          const rects = [...range.getClientRects()];
          const hit = (x: number, y: number) => {
            const at = document.elementFromPoint(x, y);
            return !!at && (el.contains(at) || at.tagName === "SELECT"); // the see-through select lies over it
          };
          return rects.every((r) => r.right <= innerWidth && hit(r.left + 1, r.top + r.height / 2) && hit(r.right - 1, r.top + r.height / 2)) && el.scrollWidth <= el.clientWidth;
        });
        expect(whole, name).toBe(true);
        const box = (await shown.boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(composer!.x);
        expect(box.x + box.width).toBeLessThanOrEqual(composer!.x + composer!.width);
        expect(await picker.inputValue()).toBe(id);
      }
      // Still a plain select: the keyboard changes it, and the name follows.
      await picker.focus();
      await page.keyboard.press("ArrowUp");
      await expect.poll(() => picker.inputValue()).not.toBe("llama-3.3-70b-turbo");
      await context.close();
    });
  }
});

describe.skipIf(!hasChromium)("a first run with no model", () => {
  let stack: Stack;
  beforeAll(async () => {
    // No model configured; the local Ollama the server looks for is the loopback upstream, with
    // no model pulled yet. The server looks for it every second here (30 s by default).
    stack = await startStack({ env: (upstream) => ({ SVC_MODEL_BASE_URL: "", OLLAMA_BASE_URL: upstream.origin, OLLAMA_REFRESH_SECONDS: "1" }) });
  });
  afterAll(() => stack?.close());

  it("shows the operator how to connect a model instead of a Send button, and chats once Ollama has one", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    // The page's clock is the test's to move.
    await page.clock.install();
    await logInLocally(page, "operator");
    const card = page.getByRole("region", { name: "Connect a model to start chatting" });
    await card.waitFor();
    expect(await card.textContent()).toContain("ollama pull llama3.2");
    expect(await card.textContent()).toContain("SVC_MODEL_BASE_URL");
    expect(await page.getByRole("textbox", { name: "Message" }).isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
    expect(await page.getByRole("alert").count()).toBe(0); // no red banner: nothing failed

    // The operator pulls a model: after the server's next look and the page's next one (every 10 s), chat works.
    stack.upstream.models = ["llama3.2:latest"];
    stack.upstream.capabilities = { "llama3.2:latest": ["completion", "tools"] };
    await eventually("the server offers the model", async () => ((await (await fetch(`${stack.url}/models`)).json()) as Array<{ available: boolean }>).some((m) => m.available));
    // The page then reads the profile again, which until now named the server's old default
    // (svc-70b, not available). That read is held until the reply is on screen: meanwhile the
    // page must neither say that model is not available nor refuse to send.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let profileReads = 0;
    await page.route("**/me", async (route) => {
      profileReads++;
      await held;
      await route.continue();
    });
    await page.clock.runFor(10_000);
    await card.waitFor({ state: "detached" });
    await eventually("the profile is read again", async () => profileReads > 0);
    expect(await page.getByText("is not available on this server").count()).toBe(0);
    await sendAndWait(page, "hello llama");
    release();
    await page.unrouteAll({ behavior: "wait" });
    expect(await page.getByRole("combobox", { name: "Model" }).inputValue()).toBe("ollama/llama3.2:latest");
    expect(stack.upstream.requests.at(-1)!.body.model).toBe("llama3.2:latest");
    await context.close();
  });
});

describe.skipIf(!hasChromium)("running out of credits", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ dailyCredits: 3 });
  });
  afterAll(() => stack?.close());

  it("says when credits return on a 402, then disables the composer with the reason", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await logInLocally(page, "hana");
    await sendAndWait(page, "one");
    await eventually("2 left", async () => (await creditsLeft(page)) === 2);

    // Another device spends the rest; this page still believes 2 are left.
    await page.evaluate(async (token) => {
      for (const message of ["two", "three"]) {
        await fetch("/chat/send", {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ message }),
        });
      }
    }, await apiToken(stack, "hana"));
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("four");
    await composer.press("Enter");
    await page.getByRole("alert").filter({ hasText: /Credits come back in \d/ }).waitFor();

    await page.getByText(/You have used all 3 credits for today\. They come back in \d/).waitFor();
    expect(await composer.isDisabled()).toBe(true);
    expect(await creditsLeft(page)).toBe(0);
    await context.close();
  });

  it("asks for the new day's allowance by itself at 00:00 UTC, without a reload", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.clock.install();
    await logInLocally(page, "ivan");
    await eventually("the counter is there", async () => (await counter(page).count()) === 1);
    const asked: string[] = [];
    page.on("request", (r) => new URL(r.url()).pathname === "/credits" && asked.push(r.url()));
    const msToMidnight = (await page.evaluate(() => {
      const now = new Date();
      return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime();
    })) as number;
    // The browser's clock (only) jumps past midnight: the client must ask the server again.
    await page.clock.fastForward(msToMidnight + 2000);
    await eventually("GET /credits asked again after the reset", async () => asked.length > 0);
    await context.close();
  });
});
