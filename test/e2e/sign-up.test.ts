import { createHash } from "node:crypto";
import { createClient } from "@libsql/client";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSiteverify, type Siteverify } from "../support/siteverify";
import { hasChromium } from "./support/chromium";
import { startStack, type Stack } from "./support/stack";

// The login screen where sign-up is not simply open (issue 24): it asks for an invite code,
// shows Cloudflare Turnstile's widget, or says that sign-up is closed, and says what a refusal
// means. Turnstile's widget script is Cloudflare's; here a stand-in with its API
// (`turnstile.render`, `reset`, `remove`) is served at its address, and the server checks the
// tokens with a stand-in siteverify on 127.0.0.1.

const SECRET = "0x4AAAAAAA-e2e-secret";

/** Turnstile's api.js as far as the client uses it: a widget whose button hands the next token to `callback`. */
function turnstileStandIn(tokens: string[]): string {
  return `(() => {
    const tokens = ${JSON.stringify(tokens)};
    const widgets = {};
    let next = 0;
    window.turnstile = {
      render(container, options) {
        const id = String(++next);
        const button = document.createElement("button");
        button.type = "button";
        const ready = () => { button.textContent = "Verify you are human"; button.disabled = false; };
        ready();
        button.onclick = () => { button.textContent = "Success!"; button.disabled = true; options.callback(tokens.shift()); };
        container.append(button);
        widgets[id] = { container, ready };
        return id;
      },
      reset(id) { widgets[id] && widgets[id].ready(); },
      remove(id) { widgets[id] && widgets[id].container.replaceChildren(); delete widgets[id]; },
    };
  })();`;
}

async function withTurnstile(context: BrowserContext, siteverify: Siteverify) {
  const tokens = [siteverify.solve(), siteverify.solve(), siteverify.solve()];
  await context.route("https://challenges.cloudflare.com/turnstile/v0/api.js*", (route) => route.fulfill({ contentType: "text/javascript", body: turnstileStandIn(tokens) }));
}

describe.skipIf(!hasChromium)("signing up by invite, past Cloudflare Turnstile", () => {
  let stack: Stack;
  let siteverify: Siteverify;
  beforeAll(async () => {
    siteverify = await startSiteverify(SECRET);
    stack = await startStack({
      env: { SIGN_UP: "invite", TURNSTILE_SITE_KEY: "1x00000000000000000000AA", TURNSTILE_SECRET_KEY: SECRET, TURNSTILE_VERIFY_URL: siteverify.url },
    });
    const db = createClient({ url: stack.server.databaseUrl });
    // Beside the running server, which may be writing: wait for its lock as it does.
    await db.execute("pragma busy_timeout = 5000");
    const hash = createHash("sha256").update("GREEN-THUMB").digest("hex");
    await db.execute({ sql: "insert into invites (id, code_hash, uses_left, expires_at, plan_id, note, created_by, created_at) values ('inv_e2e', ?, 1, null, null, 'e2e', null, ?)", args: [hash, Date.now()] });
    db.close();
  });
  afterAll(async () => {
    await stack?.close();
    await siteverify?.close();
  });

  it("asks for the invite code, then for the check that one is a person, and says so each time; then signs in", async () => {
    const context = await stack.newContext();
    await withTurnstile(context, siteverify);
    const page = await context.newPage();
    await page.goto("/login");
    const alert = page.getByRole("alert");
    await page.getByLabel("Your name").fill("ivy");
    await page.getByRole("button", { name: "Log in" }).click();
    await alert.getByText(/new accounts need an invite here: enter the invite code you were given/).waitFor();

    await page.getByRole("textbox", { name: "Invite code" }).fill("GREEN-THUMB");
    await page.getByRole("button", { name: "Log in" }).click();
    await alert.getByText(/needs the check that you are a person: complete it on the sign-in page/).waitFor();

    await page.getByRole("button", { name: "Verify you are human" }).click();
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    expect(siteverify.seen.at(-1)).toMatchObject({ secret: SECRET, remoteip: "127.0.0.1" });
    await context.close();
  });

  it("signs an existing account in with neither", async () => {
    const context = await stack.newContext();
    await withTurnstile(context, siteverify);
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByLabel("Your name").fill("ivy");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await context.close();
  });
});

describe.skipIf(!hasChromium)("where sign-up is closed", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { SIGN_UP: "closed" } });
  });
  afterAll(() => stack?.close());

  it("says so before and after a new name tries", async () => {
    const context = await stack.newContext();
    const page = await context.newPage();
    await page.goto("/login");
    await page.getByText("This service is not taking new accounts: sign in with the account you already have.").waitFor();
    await page.getByLabel("Your name").fill("newcomer");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").getByText(/not taking new accounts: only existing accounts sign in/).waitFor();
    await context.close();
  });
});
