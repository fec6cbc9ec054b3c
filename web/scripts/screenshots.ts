// npm run screenshots: the main screens, light and dark, into docs/screenshots/, taken in
// headless Chromium against the real server with a little seeded data.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { chromium, type Page } from "playwright-core";
import { privateKeyToAccount } from "viem/accounts";
import { chromiumPath, hasChromium } from "../../test/e2e/support/chromium";
import { injectWallets } from "../../test/e2e/support/wallet";
import { startFakeUpstream } from "../../test/support/fake-upstream";
import { pdf } from "../../test/support/files";
import { startServerProcess } from "../../test/support/server-process";
import { adminScreens } from "./admin-screenshots";
import { buildWebIfNeeded } from "./build-if-needed.mjs";

const out = resolve(import.meta.dirname, "../../docs/screenshots");

const REPLY = `Here is a simple routine for a **Monstera deliciosa**:

1. **Check the soil**: water when the top 5 cm are dry.
2. **Water thoroughly** until it drains from the bottom, then empty the saucer.
3. **Ease off in winter**: every two to three weeks is enough.

A tiny reminder script:

\`\`\`python
from datetime import date, timedelta

last_watered = date(2026, 11, 16)
print("Next watering:", last_watered + timedelta(days=7))
\`\`\`

> Yellow leaves usually mean *too much* water, not too little.`;

/**
 * The first run of a server with no model: the setup card, in local mode. Its Ollama is a
 * loopback upstream with no model pulled.
 */
async function setupCard() {
  const upstream = await startFakeUpstream({ record: false });
  const server = await startServerProcess({ OLLAMA_BASE_URL: upstream.origin, RATE_LIMIT_PER_MINUTE: "0" });
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  try {
    for (const theme of ["light", "dark"] as const) {
      const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
      const page = await context.newPage();
      await page.goto("/login");
      await page.getByLabel("Your name").fill("Alice");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByRole("region", { name: "Connect a model to start chatting" }).waitFor();
      await page.mouse.move(900, 400);
      await page.screenshot({ path: join(out, `setup-card-${theme}.png`) });
      await context.close();
    }
  } finally {
    await browser.close();
    await server.close();
    await upstream.close();
  }
}

/** Pastes a picture drawn on a canvas (a leaf on a pot) into the composer, as a PNG named `name`. */
async function pasteDrawing(page: Page, name: string, hue: number) {
  await page.getByRole("textbox", { name: "Message" }).evaluate(
    async (el, [fileName, h]) => {
      const canvas = document.createElement("canvas");
      canvas.width = 480;
      canvas.height = 360;
      const g = canvas.getContext("2d")!;
      g.fillStyle = `hsl(${h}, 45%, 88%)`;
      g.fillRect(0, 0, 480, 360);
      g.fillStyle = "#8d5a3b";
      g.fillRect(190, 250, 100, 90);
      g.fillStyle = "hsl(130, 45%, 32%)";
      for (const [x, y, r] of [[240, 150, 80], [170, 190, 55], [310, 185, 60]]) {
        g.beginPath();
        g.ellipse(x!, y!, r!, r! * 0.7, 0.4, 0, Math.PI * 2);
        g.fill();
      }
      const blob = await new Promise<Blob>((resolve) => canvas.toBlob((b) => resolve(b!), "image/png"));
      const data = new DataTransfer();
      data.items.add(new File([blob], fileName as string, { type: "image/png" }));
      el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    },
    [name, hue] as const,
  );
}

/** A conversation with an image and a PDF sent, and two more files in the composer: wide and phone, light and dark. */
async function attachments() {
  const upstream = await startFakeUpstream({ record: false });
  upstream.reply = () => "That is a **Monstera deliciosa**. Its care sheet says to water when the top 5 cm of soil are dry and to keep it in bright, indirect light.";
  const models = [{ id: "vision", name: "Vision", protocol: "openai", baseUrl: upstream.baseUrl, images: true, default: true }];
  const server = await startServerProcess({ MODELS: JSON.stringify(models), RATE_LIMIT_PER_MINUTE: "0", SIGN_UPS_PER_ADDRESS_PER_HOUR: "0", SIGN_INS_PER_ADDRESS_PER_MINUTE: "0", SIGN_INS_PER_IDENTITY_PER_MINUTE: "0" });
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  try {
    for (const theme of ["light", "dark"] as const) {
      for (const [prefix, width, height] of [["chat-attachments", 1280, 800], ["phone-attachments", 375, 812]] as const) {
        const context = await browser.newContext({ baseURL: server.url, viewport: { width, height }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
        const page = await context.newPage();
        await page.goto("/login");
        await page.getByLabel("Your name").fill("Alice");
        await page.getByRole("button", { name: "Log in" }).click();
        await pasteDrawing(page, "my-plant.png", 40);
        const chooser = page.waitForEvent("filechooser");
        await page.getByRole("button", { name: "Attach files" }).click();
        await (await chooser).setFiles({ name: "care-sheet.pdf", mimeType: "application/pdf", buffer: Buffer.from(pdf(["Monstera care", "Water when the top 5 cm are dry", "Bright, indirect light"])) });
        await page.getByRole("status").filter({ hasText: "care-sheet.pdf: attached" }).waitFor({ state: "attached" });
        await page.getByRole("status").filter({ hasText: "my-plant.png: attached" }).waitFor({ state: "attached" });
        await page.getByRole("textbox", { name: "Message" }).fill("What plant is this, and what does its care sheet say?");
        await page.getByRole("button", { name: "Send" }).click();
        await page.getByText("Its care sheet says").waitFor();
        await page.getByRole("img", { name: "my-plant.png" }).waitFor();
        await pasteDrawing(page, "new-leaf.png", 200);
        await page.getByRole("status").filter({ hasText: "new-leaf.png: attached" }).waitFor({ state: "attached" });
        await page.getByRole("textbox", { name: "Message" }).fill("And this new leaf?");
        await page.mouse.move(width - 10, 10);
        await page.screenshot({ path: join(out, `${prefix}-${theme}.png`) });
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await server.close();
    await upstream.close();
  }
}

async function main() {
  if (!hasChromium) throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium`);
  buildWebIfNeeded();
  // The servers below run dist/server.js, as npm start does.
  execFileSync(process.execPath, [resolve(import.meta.dirname, "../../scripts/build-server.mjs"), "--if-needed"], { stdio: "inherit" });
  mkdirSync(out, { recursive: true });
  await adminScreens(out);
  // `npm run screenshots -- admin`: the Admin area and the suspended page alone.
  if (process.argv.includes("admin")) return;
  await attachments();
  // `npm run screenshots -- attachments`: those screens alone.
  if (process.argv.includes("attachments")) return;
  await setupCard();
  // `npm run screenshots -- setup-card`: that screen alone.
  if (process.argv.includes("setup-card")) return;
  const dbFile = join(mkdtempSync(join(tmpdir(), "screenshots-")), "db");
  const upstream = await startFakeUpstream({ record: false });
  // The monstera question's second answer (a regenerated reply) differs from its first.
  let monsteraAnswers = 0;
  upstream.reply = (req) =>
    req.body.messages.at(-1)?.content.includes("monstera")
      ? monsteraAnswers++ % 2 === 0
        ? REPLY
        : "Water a monstera when the top 5 cm of soil are dry: about **every 1–2 weeks** in summer, less in winter."
      : "Sure: bright, indirect light and a well-draining mix.";
  const server = await startServerProcess({ SVC_MODEL_BASE_URL: upstream.baseUrl, STT_BASE_URL: upstream.baseUrl, DATABASE_URL: `file:${dbFile}`, RATE_LIMIT_PER_MINUTE: "0" });
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  try {
    // Seed: a few conversations, two groups, an API key, and some past days of use.
    const { token } = (await (
      await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"Alice"}' })
    ).json()) as { token: string };
    const call = (path: string, body?: unknown, method = "POST") =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => (r.status === 204 ? null : r.json()));
    await call(
      "/me",
      {
        preferences: { voiceInput: true },
        presets: [
          { name: "Gardening coach", instructions: "You are a patient gardening coach. Answer in metric units, and say when a plant needs a professional." },
          { name: "Plant doctor", instructions: "Ask for a photo description first, then list the likely causes from most to least likely." },
        ],
      },
      "PATCH",
    );
    const houseplants = (await call("/groups", { name: "Houseplants" })) as { id: string };
    await call("/groups", { name: "Garden" });
    for (const [message, group] of [
      ["Which succulents survive a north-facing window?", houseplants.id],
      ["Best soil mix for a fiddle leaf fig", houseplants.id],
      ["Planning a herb garden on a balcony", null],
      ["Why are my tomato leaves curling?", null],
      ["Repotting a snake plant: when and how", null],
      ["Orchid care after the flowers drop", null],
    ] as const) {
      const reply = (await call("/chat/send", { message })) as { contextId: string };
      if (group) await call(`/contexts/${reply.contextId}`, { groupId: group }, "PATCH");
      if (message.startsWith("Planning")) await call(`/contexts/${reply.contextId}`, { pinned: true }, "PATCH");
    }
    await call("/keys", { name: "laptop script" });
    await call("/keys", { name: "home automation" });
    const me = (await call("/me", undefined, "GET")) as { id: string };
    const db = createClient({ url: `file:${dbFile}` });
    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    for (let d = 1; d < 30; d++) {
      const day = new Date(today - d * 86_400_000).toISOString().slice(0, 10);
      const used = Math.round(40 + 35 * Math.sin(d / 3) + (d % 7) * 6);
      if (d % 9 !== 4) await db.execute({ sql: "INSERT INTO credit_days (user_id, day, used) VALUES (?, ?, ?)", args: [me.id, day, used] });
    }
    db.close();
    // Another device of Alice's, for the list of sessions.
    await fetch(`${server.url}/auth/session`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
      },
      body: '{"local":{"name":"Alice"}}',
    });
    // A browser wallet (a fixed test key, so that the screenshots keep one address).
    const wallet = privateKeyToAccount(`0x${"4c".repeat(32)}`);

    for (const theme of ["light", "dark"] as const) {
      const shoot = (page: Page, name: string) => page.screenshot({ path: join(out, `${name}-${theme}.png`) });
      const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 }, colorScheme: theme, deviceScaleFactor: 1, reducedMotion: "reduce" });
      await injectWallets(context, [{ name: "Test Wallet", account: wallet }]);
      const page = await context.newPage();
      await page.goto("/login");
      await page.getByLabel("Your name").waitFor();
      await shoot(page, "login");
      await page.getByLabel("Your name").fill("Alice");
      await page.getByRole("button", { name: "Log in" }).click();
      const composer = page.getByRole("textbox", { name: "Message" });
      await composer.waitFor();
      await composer.fill("How often should I water my monstera?");
      await composer.press("Enter");
      await page.getByText("Yellow leaves usually mean").waitFor();
      await page.getByRole("button", { name: /Houseplants/ }).first().click(); // the folder, not its Options
      await page.getByRole("link", { name: "Best soil mix for a fiddle leaf fig" }).waitFor();
      await page.mouse.move(900, 400);
      await shoot(page, "chat");
      // Another answer to the same question: a second version of the reply, ‹ 2/2 ›.
      await page.getByRole("button", { name: "Regenerate reply" }).last().click();
      await page.getByText("about every 1–2 weeks").waitFor();
      await page.getByRole("button", { name: "Send" }).waitFor();
      // Stored, with its controls (Send comes back a moment before the conversation is read again).
      await page.getByRole("group", { name: "Version 2 of 2" }).waitFor();
      await page.mouse.move(900, 400);
      await shoot(page, "chat-versions");
      await page.getByRole("button", { name: "Previous version of this reply" }).click();
      await page.getByText("Yellow leaves usually mean").waitFor();

      await page.getByRole("searchbox", { name: "Search conversations" }).pressSequentially("soil");
      await page.getByRole("list", { name: "Search results" }).getByRole("link").first().waitFor();
      await page.getByRole("button", { name: "Options for How often should I water my monstera?" }).count();
      await shoot(page, "navigator-search");
      await page.getByRole("searchbox", { name: "Search conversations" }).fill("");

      // The public page of a shared conversation, as a stranger sees it.
      const contextId = new URL(page.url()).pathname.split("/").pop()!;
      const share = (await call(`/contexts/${contextId}/share`, {})) as { url: string };
      const stranger = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: theme });
      const sharedPage = await stranger.newPage();
      await sharedPage.goto(share.url);
      await sharedPage.getByText("Yellow leaves usually mean").waitFor();
      await sharedPage.screenshot({ path: join(out, `share-page-${theme}.png`) });
      await stranger.close();

      await page.goto("/settings/profile");
      await page.getByRole("textbox", { name: "Name" }).waitFor();
      await shoot(page, "settings-profile");
      await page.goto("/settings/api-keys");
      await page.getByRole("row", { name: /home automation/ }).waitFor();
      await shoot(page, "settings-api-keys");
      await page.goto("/settings/usage");
      await page.getByRole("list", { name: "Credits used per day" }).waitFor();
      await page.getByRole("row").nth(2).waitFor();
      await shoot(page, "settings-usage");
      await page.goto("/settings/sign-in");
      await page.getByRole("button", { name: "Add a wallet" }).click();
      await page.getByRole("list", { name: "Your sign-in methods" }).getByText(wallet.address).waitFor();
      await page.getByRole("list", { name: "Signed-in devices" }).getByText("Safari on iPhone").waitFor();
      await page.getByText(/^Waiting for Test Wallet/).waitFor({ state: "detached" });
      await shoot(page, "settings-sign-in");
      await page.goto("/settings/presets");
      await page.getByRole("heading", { name: "Instruction presets" }).waitFor();
      await page.getByText("Plant doctor").waitFor();
      await shoot(page, "settings-presets");
      await page.goto("/settings/data");
      await page.getByRole("heading", { name: "Import conversations" }).waitFor();
      await shoot(page, "settings-data");

      const phone = await browser.newContext({ baseURL: server.url, viewport: { width: 375, height: 740 }, colorScheme: theme, reducedMotion: "reduce", storageState: await context.storageState() });
      const mobile = await phone.newPage();
      await mobile.goto("/");
      await mobile.getByRole("button", { name: "Open conversations" }).click();
      await mobile.getByRole("link", { name: "Planning a herb garden on a balcony" }).waitFor();
      await mobile.waitForTimeout(300); // the drawer's slide-in
      await mobile.screenshot({ path: join(out, `phone-navigator-${theme}.png`) });
      await mobile.getByRole("link", { name: /How often should I water/ }).first().click();
      await mobile.getByText("Yellow leaves usually mean").waitFor();
      await mobile.waitForTimeout(300);
      await mobile.screenshot({ path: join(out, `phone-chat-${theme}.png`) });
      await phone.close();
      await context.close();
    }
    console.log(`screenshots written to ${out}`);
  } finally {
    await browser.close();
    await server.close();
    await upstream.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
