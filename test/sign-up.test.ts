import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { ServerType } from "@hono/node-server";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { ConfigError, parseConfig } from "../src/platform/config";
import { createNodeDeps } from "../src/platform/node/node-deps";
import { serveNode } from "../src/platform/node/serve-node";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";
import { startSiteverify } from "./support/siteverify";
import { HARNESS_ORIGIN, newWallet, postWalletProof, siweMessage } from "./support/wallet";
import { BUILT_DATABASE_THREAD } from "./support/build-server";

// Sign-up that cannot be farmed (issue 24). The attack: 300 fresh wallets signed in from one
// address in 16 s, each a new account with the day's free credits. Now new accounts proved by
// this service alone (wallets, names) are limited per client address, in the database; the
// operator may close sign-up or require invites; Turnstile may guard new accounts; and
// successful sign-ins are limited per address and per identity.

const CLIENT = "X-Client-Address";


/** A wallet's proof for the service at HARNESS_ORIGIN, with a nonce from `base` (a listening server). */
async function walletProof(base: string, wallet: PrivateKeyAccount, issuedAt: Date) {
  const { nonce } = (await (await fetch(`${base}/auth/wallet/nonce`, { method: "POST" })).json()) as { nonce: string };
  const origin = new URL(HARNESS_ORIGIN);
  const message = createSiweMessage({ domain: origin.host, address: wallet.address, uri: `${origin.origin}/`, version: "1", chainId: 1, nonce, issuedAt });
  return { wallet: { message, signature: await wallet.signMessage({ message }) } };
}

const postSession = (base: string, body: unknown) =>
  fetch(`${base}/auth/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

describe("new accounts per client address (SIGN_UPS_PER_ADDRESS_PER_HOUR)", () => {
  let h: Harness;
  let base: string;
  beforeAll(async () => {
    h = await createHarness();
    base = await h.listen();
  });
  afterAll(() => h.close());

  it("lets 300 wallets from one address make 5 accounts; the other 295 get 429 sign_up_limited; an existing wallet still signs in; a restart keeps the count", async () => {
    const wallets = Array.from({ length: 300 }, () => privateKeyToAccount(generatePrivateKey()));
    const statuses: Record<number, number> = {};
    const codes = new Set<string>();
    let retryAfter = 0;
    const admitted: typeof wallets = [];
    // As a farm sends them: ten at a time, so that sign-ups race for the last places too.
    const queue = [...wallets];
    const signUpNext = async (): Promise<void> => {
      const wallet = queue.shift();
      if (!wallet) return;
      const res = await postSession(base, await walletProof(base, wallet, h.clock.now()));
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 429) {
        codes.add(((await res.json()) as { code: string }).code);
        retryAfter = Number(res.headers.get("retry-after"));
      } else {
        if (res.status === 200) admitted.push(wallet);
        await res.body?.cancel();
      }
      return signUpNext();
    };
    await Promise.all(Array.from({ length: 10 }, signUpNext));
    expect(statuses).toEqual({ 200: 5, 429: 295 });
    expect([...codes]).toEqual(["sign_up_limited"]);
    // The harness's clock is 12:00: the count starts again at 13:00.
    expect(retryAfter).toBe(3600);
    const [{ accounts }] = (await h.db.all(`select count(*) as accounts from users where issuer = 'eip155'`)) as [{ accounts: number }];
    expect(accounts).toBe(5);

    // An account that exists signs in whatever the count.
    expect((await postSession(base, await walletProof(base, admitted[0]!, h.clock.now()))).status).toBe(200);
    const refused = await postSession(base, await walletProof(base, newWallet(), h.clock.now()));
    await expectError(refused, 429, /too many new accounts from this network in the last hour \(at most 5\): sign in with an account you already have, or create this one in 60 minutes/, "sign_up_limited");

    // A restart (a new process over the same database) refuses too: the count is a row.
    const config = parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: h.idp.issuer, AUTH_AUDIENCE: h.idp.audience, LOG_LEVEL: "error" });
    const other = await createNodeDeps(config, { databaseUrl: `file:${h.dbFile}`, builtDatabaseThread: BUILT_DATABASE_THREAD, now: h.clock.now });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serveNode(createApp(() => other.deps).fetch, { port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    try {
      const restarted = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await expectError(await postSession(restarted, await walletProof(restarted, newWallet(), h.clock.now())), 429, /too many new accounts/, "sign_up_limited");
      // The next hour admits new accounts again.
      h.clock.advance(3600_000);
      expect((await postSession(restarted, await walletProof(restarted, newWallet(), h.clock.now()))).status).toBe(200);
    } finally {
      h.clock.set("2026-11-22T12:00:00.000Z");
      await new Promise<void>((resolve) => server.close(() => resolve()));
      other.client.close();
    }
  }, 120_000);

  it("does not count an identity provider's accounts, which the provider gates", async () => {
    // From the same address, whose new wallets and names are refused until the hour turns.
    const res = await postSession(base, { accessToken: await h.signIn("provider-person") });
    expect(res.status).toBe(200);
  });
});

describe("the sign-up policy (SIGN_UP)", () => {
  let h: Harness;
  let existing: PrivateKeyAccount;
  beforeAll(async () => {
    h = await createHarness();
    existing = newWallet();
    const message = await siweMessage(h, existing.address);
    expect((await postWalletProof(h, message, await existing.signMessage({ message }))).status).toBe(200);
    await h.request("/plants", { token: await h.signIn("provider-existing") });
    await h.request("/plants", { method: "POST", token: await h.signIn("provider-existing"), json: { id: 1, name: "Fern" } });
  });
  afterAll(() => h.close());

  /** The same database served with another sign-up configuration, as after the operator changes it and restarts. */
  async function withConfig(env: Record<string, string>) {
    const config = parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: h.idp.issuer, AUTH_AUDIENCE: h.idp.audience, LOG_LEVEL: "error", ...env });
    const node = await createNodeDeps(config, { databaseUrl: `file:${h.dbFile}`, builtDatabaseThread: BUILT_DATABASE_THREAD, now: h.clock.now });
    const app = createApp(() => node.deps);
    const request = (path: string, init: RequestInit & { json?: unknown; token?: string } = {}) => {
      const headers = new Headers(init.headers);
      if (init.json !== undefined) headers.set("Content-Type", "application/json");
      if (init.token) headers.set("Authorization", `Bearer ${init.token}`);
      return Promise.resolve(app.request(path, { ...init, headers, body: init.json === undefined ? init.body : JSON.stringify(init.json) }));
    };
    const wallet = async (account: PrivateKeyAccount, extra: Record<string, string> = {}) => {
      const message = await siweMessage({ request, clock: h.clock }, account.address);
      return request("/auth/session", { method: "POST", json: { wallet: { message, signature: await account.signMessage({ message }) }, ...extra } });
    };
    return { request, wallet, close: () => node.client.close() };
  }

  it("closed: only existing accounts sign in, by any method; a new one is 403 sign_up_closed, a new provider token too", async () => {
    const closed = await withConfig({ SIGN_UP: "closed" });
    try {
      expect((await closed.wallet(existing)).status).toBe(200);
      await expectError(await closed.wallet(newWallet()), 403, /not taking new accounts: only existing accounts sign in/, "sign_up_closed");
      await expectError(await closed.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn("provider-new") } }), 403, /not taking new accounts/, "sign_up_closed");
      // An API client's provider token cannot make an account by its first write either.
      await expectError(await closed.request("/plants", { method: "POST", token: await h.signIn("provider-new"), json: { id: 1, name: "x" } }), 403, /has no account here/, "sign_up_closed");
      expect(await (await closed.request("/plants", { token: await h.signIn("provider-existing") })).json()).toEqual([{ name: "Fern" }]);
      const config = (await (await closed.request("/client-config")).json()) as { signUp: unknown };
      expect(config.signUp).toEqual({ policy: "closed", turnstileSiteKey: null });
    } finally {
      closed.close();
    }
  });

  it("invite: a new account needs a live invite code beside its proof; each use counts; existing accounts need none", async () => {
    const sha = (code: string) => createHash("sha256").update(code).digest("hex");
    const now = h.clock.now().getTime();
    await h.db.run(`insert into invites (id, code_hash, uses_left, expires_at, plan_id, note, created_by, created_at) values
      ('inv_two', '${sha("WELCOME-TWO")}', 2, ${now + 86_400_000}, null, 'two friends', 'usr_admin', ${now}),
      ('inv_old', '${sha("LAST-YEAR")}', 5, ${now - 1000}, 'pro', 'expired', 'usr_admin', ${now - 86_400_000})`);
    const invite = await withConfig({ SIGN_UP: "invite" });
    try {
      await expectError(await invite.wallet(newWallet()), 403, /new accounts need an invite here: enter the invite code/, "invite_required");
      await expectError(await invite.wallet(newWallet(), { inviteCode: "WELCOME-ONE" }), 403, /invite code is not valid/, "invite_invalid");
      await expectError(await invite.wallet(newWallet(), { inviteCode: "LAST-YEAR" }), 403, /mistyped, used up or expired/, "invite_invalid");
      expect((await invite.wallet(newWallet(), { inviteCode: "WELCOME-TWO" })).status).toBe(200);
      expect((await invite.wallet(newWallet(), { inviteCode: " WELCOME-TWO " })).status).toBe(200);
      await expectError(await invite.wallet(newWallet(), { inviteCode: "WELCOME-TWO" }), 403, /used up/, "invite_invalid");
      expect(await h.db.all("select uses_left from invites where id = 'inv_two'")).toEqual([{ uses_left: 0 }]);
      expect((await invite.wallet(existing)).status).toBe(200);
      await expectError(await invite.request("/plants", { token: await h.signIn("provider-uninvited") }), 403, /needs? an invite|new accounts need an invite/, "invite_required");
      await expectError(await invite.request("/auth/session", { method: "POST", json: { accessToken: "x", inviteCode: 5 } }), 400, /inviteCode/);
    } finally {
      invite.close();
    }
  });
});

describe("Cloudflare Turnstile in front of new accounts", () => {
  const SECRET = "0x4AAAAAAA-test-secret";
  let siteverify: Awaited<ReturnType<typeof startSiteverify>>;
  let h: Harness;
  beforeAll(async () => {
    siteverify = await startSiteverify(SECRET);
    h = await createHarness({
      env: { TURNSTILE_SITE_KEY: "1x00000000000000000000AA", TURNSTILE_SECRET_KEY: SECRET, TURNSTILE_VERIFY_URL: siteverify.url, CLIENT_IP_HEADER: CLIENT },
    });
  });
  afterAll(async () => {
    await h.close();
    await siteverify.close();
  });

  const walletSignUp = async (account: PrivateKeyAccount, extra: Record<string, string> = {}) => {
    const message = await siweMessage(h, account.address);
    return h.request("/auth/session", { method: "POST", json: { wallet: { message, signature: await account.signMessage({ message }) }, ...extra }, headers: { [CLIENT]: "203.0.113.9" } });
  };

  it("asks a new wallet account for a Turnstile token, checks it with siteverify (secret, response, remoteip), once", async () => {
    await expectError(await walletSignUp(newWallet()), 403, /needs the check that you are a person/, "turnstile_required");
    await expectError(await walletSignUp(newWallet(), { turnstileToken: "forged" }), 403, /did not pass, or it expired/, "turnstile_failed");
    const token = siteverify.solve();
    const person = newWallet();
    expect((await walletSignUp(person, { turnstileToken: token })).status).toBe(200);
    expect(siteverify.seen.at(-1)).toEqual({ secret: SECRET, response: token, remoteip: "203.0.113.9" });
    // A token serves once.
    await expectError(await walletSignUp(newWallet(), { turnstileToken: token }), 403, /did not pass/, "turnstile_failed");
    // The account now exists: no token needed, and no check made.
    const checks = siteverify.seen.length;
    expect((await walletSignUp(person)).status).toBe(200);
    expect(siteverify.seen.length).toBe(checks);
    // An identity provider's account is the provider's to gate.
    expect((await h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn("turnstile-provider") } })).status).toBe(200);
  });

  it("answers 503 turnstile_unavailable when siteverify cannot say, and names a refused secret in the log", async () => {
    const wrong = await createHarness({ env: { TURNSTILE_SITE_KEY: "1x00000000000000000000AA", TURNSTILE_SECRET_KEY: "not-the-secret", TURNSTILE_VERIFY_URL: siteverify.url } });
    try {
      const account = newWallet();
      const proof = await siweMessage(wrong, account.address);
      const refused = await wrong.request("/auth/session", {
        method: "POST",
        json: { wallet: { message: proof, signature: await account.signMessage({ message: proof }) }, turnstileToken: siteverify.solve() },
      });
      await expectError(refused, 503, /misconfigured on this server: its operator must fix TURNSTILE_SECRET_KEY/, "turnstile_unavailable");
      expect(refused.headers.get("retry-after")).toBe("10");
      expect(wrong.logs.text()).toContain("Turnstile refused this server's secret");
    } finally {
      await wrong.close();
    }
    const down = await createHarness({ env: { TURNSTILE_SITE_KEY: "1x00000000000000000000AA", TURNSTILE_SECRET_KEY: SECRET, TURNSTILE_VERIFY_URL: "http://127.0.0.1:9/siteverify" } });
    try {
      const account = newWallet();
      const message = await siweMessage(down, account.address);
      const res = await down.request("/auth/session", { method: "POST", json: { wallet: { message, signature: await account.signMessage({ message }) }, turnstileToken: "t" } });
      await expectError(res, 503, /could not be confirmed with Cloudflare just now/, "turnstile_unavailable");
    } finally {
      await down.close();
    }
  });

  it("hands the site key to the web client and lets its pages load Turnstile, only when configured", async () => {
    const config = (await (await h.request("/client-config")).json()) as { signUp: unknown };
    expect(config.signUp).toEqual({ policy: "open", turnstileSiteKey: "1x00000000000000000000AA" });
    const { htmlSecurityHeaders } = await import("../src/platform/http/web-client");
    const csp = htmlSecurityHeaders(h.deps.config)["Content-Security-Policy"];
    expect(csp).toContain("script-src 'self' https://challenges.cloudflare.com;");
    expect(csp).toContain("frame-src https://challenges.cloudflare.com;");
    const plain = htmlSecurityHeaders(parseConfig({ AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "a" }))["Content-Security-Policy"];
    expect(plain).not.toContain("challenges.cloudflare.com");
    expect(() => parseConfig({ AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "a", TURNSTILE_SITE_KEY: "k" })).toThrow(ConfigError);
    expect(() => parseConfig({ AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "a", TURNSTILE_SITE_KEY: "k" })).toThrow(/TURNSTILE_SECRET_KEY is missing/);
  });
});

describe("successful sign-ins are limited too", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ env: { CLIENT_IP_HEADER: CLIENT, SIGN_INS_PER_ADDRESS_PER_MINUTE: "4", SIGN_INS_PER_IDENTITY_PER_MINUTE: "3" } });
  });
  afterAll(() => h.close());

  const signIn = async (name: string, address: string) =>
    h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn(name) }, headers: { [CLIENT]: address } });

  it("per identity: past SIGN_INS_PER_IDENTITY_PER_MINUTE, 429 too_many_sign_ins with Retry-After, until the minute turns", async () => {
    for (let i = 0; i < 3; i++) expect((await signIn("often", `198.51.100.${i + 1}`)).status).toBe(200);
    const refused = await signIn("often", "198.51.100.9");
    await expectError(refused, 429, /too many sign-ins to this account in the last minute: retry in 60 s/, "too_many_sign_ins");
    expect(refused.headers.get("retry-after")).toBe("60");
    h.clock.advance(60_000);
    expect((await signIn("often", "198.51.100.9")).status).toBe(200);
  });

  it("per client address: past SIGN_INS_PER_ADDRESS_PER_MINUTE, 429 too_many_sign_ins; another address goes on", async () => {
    for (let i = 0; i < 4; i++) expect((await signIn(`crowd-${i}`, "2001:db8:1:2::7")).status).toBe(200);
    // Another address of the same /64 is the same client.
    await expectError(await signIn("crowd-4", "2001:db8:1:2::8"), 429, /too many sign-ins from this address/, "too_many_sign_ins");
    expect((await signIn("crowd-4", "2001:db8:9:9::1")).status).toBe(200);
  });
});
