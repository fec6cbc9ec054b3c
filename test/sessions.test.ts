import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { REFRESH_GRACE_MS } from "../src/features/sign-in/sessions";
import { parseConfig } from "../src/platform/config";
import { createRuntime } from "../src/platform/deps";
import { createHarness, openDatabaseFile, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { HARNESS_ORIGIN, newWallet, postWalletProof, siweMessage } from "./support/wallet";

// The service's own sessions: whatever proof comes in (here Privy-shaped tokens of a JWKS
// provider, and wallets), a short access token and a refresh cookie come out; the refresh
// token rotates, a reused one ends the session, and only the service's own origin may use
// the cookie. Devices and linked sign-in methods ride on the same sessions.

const PRIVY_APP = "cm4privyappid0000000000";
const START = "2026-11-22T12:00:00.000Z";
let h: Harness;
beforeAll(async () => {
  // A JWKS provider issuing tokens shaped like Privy's: iss privy.io, aud the app id, a DID as sub.
  h = await createHarness({ env: { AUTH_ISSUER: "privy.io", AUTH_AUDIENCE: PRIVY_APP } });
});
afterAll(() => h.close());

/** A Privy access token (`sid`, `sub` a did:privy) or identity token (`linked_accounts` as a JSON string), signed by the JWKS's key. */
function privyToken(did: string, claims: JWTPayload = {}, expiresIn: string | number = "1h") {
  return new SignJWT({ sid: "cm4session00000000000000", ...claims })
    .setProtectedHeader({ alg: "ES256", kid: "test-key-1", typ: "JWT" })
    .setIssuer("privy.io")
    .setAudience(PRIVY_APP)
    .setSubject(did)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(h.idp.privateKey);
}

type Session = { accessToken: string; expiresAt: string; user: { id: string; name: string; avatarUrl: string | null } };

/** The refresh token a reply set, and the cookie's attributes. */
function refreshCookie(res: Response): { token: string; attributes: string[] } {
  const header = res.headers.get("set-cookie") ?? "";
  const [pair, ...attributes] = header.split(";").map((part) => part.trim());
  expect(pair).toMatch(/^refresh_token=/);
  return { token: pair!.slice("refresh_token=".length), attributes };
}

async function signInWithPrivy(did: string, claims: JWTPayload = {}, userAgent?: string) {
  const res = await h.request("/auth/session", {
    method: "POST",
    json: { accessToken: await privyToken(did, claims) },
    headers: userAgent ? { "User-Agent": userAgent } : {},
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return { session: (await res.json()) as Session, cookie: refreshCookie(res).token };
}

const refresh = (cookie: string | undefined, origin: string | null = HARNESS_ORIGIN, target: Pick<Harness, "request"> = h) =>
  target.request("/auth/refresh", {
    method: "POST",
    headers: { ...(cookie ? { Cookie: `refresh_token=${cookie}` } : {}), ...(origin ? { Origin: origin } : {}) },
  });

describe("a session from the identity provider's token", () => {
  it("takes a Privy-shaped access token, seeds the profile from its claims, and issues an ES256 token of the service's own", async () => {
    const { session } = await signInWithPrivy("did:privy:ada", { name: "Ada Lovelace", picture: "https://cdn.example/ada.png" });
    expect(session.user).toEqual({ id: expect.stringMatching(/^usr_/), name: "Ada Lovelace", avatarUrl: "https://cdn.example/ada.png" });
    const me = (await (await h.request("/me", { token: session.accessToken })).json()) as { id: string; identity: object };
    expect(me.identity).toEqual({ issuer: "privy.io", subject: "did:privy:ada" });

    // The same person as the provider's bearer token names (API clients are unchanged).
    const bearer = (await (await h.request("/me", { token: await privyToken("did:privy:ada") })).json()) as { id: string };
    expect(bearer.id).toBe(me.id);

    // Verifiable by anyone with /.well-known/jwks.json.
    const jwks = await (await h.request("/.well-known/jwks.json")).json();
    const { payload, protectedHeader } = await jwtVerify(session.accessToken, createLocalJWKSet(jwks as never), { currentDate: h.clock.now() });
    expect(protectedHeader).toMatchObject({ alg: "ES256", typ: "at+jwt" });
    expect(payload).toMatchObject({ iss: HARNESS_ORIGIN, aud: HARNESS_ORIGIN, sub: me.id, method: "provider" });
    expect(payload.exp! - payload.iat!).toBe(900);
  });

  it("takes the provider's identity token, for the same account", async () => {
    const { session: first } = await signInWithPrivy("did:privy:idtoken");
    const idToken = await privyToken("did:privy:idtoken", { linked_accounts: JSON.stringify([{ type: "wallet", address: "0xabc" }]) });
    const res = await h.request("/auth/session", { method: "POST", json: { idToken } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Session).user.id).toBe(first.user.id);
  });

  it("refuses an expired or foreign token with 401, and answers 503 while the provider is down", async () => {
    const expired = await privyToken("did:privy:late", {}, Math.floor(Date.now() / 1000) - 60);
    await expectError(await h.request("/auth/session", { method: "POST", json: { accessToken: expired } }), 401, /the identity provider's token has expired/, "provider_token_invalid");
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).setIssuer("privy.io").setAudience(PRIVY_APP).setSubject("did:privy:x").setExpirationTime("1h").sign(privateKey);
    await expectError(await h.request("/auth/session", { method: "POST", json: { accessToken: forged } }), 401, /signature is invalid/, "provider_token_invalid");

    const down = await createHarness({ env: { AUTH_ISSUER: "privy.io", AUTH_AUDIENCE: PRIVY_APP } });
    try {
      down.idp.setJwksMode("down");
      const token = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "test-key-1" }).setIssuer("privy.io").setAudience(PRIVY_APP).setSubject("did:privy:y").setExpirationTime("1h").sign(down.idp.privateKey);
      const res = await down.request("/auth/session", { method: "POST", json: { accessToken: token } });
      await expectError(res, 503, /could not be fetched; try again shortly/, "identity_provider_unavailable");
      expect(res.headers.get("retry-after")).toBe("10");
    } finally {
      await down.close();
    }
  });

  it("does not offer a local login beside a provider", async () => {
    await expectError(await h.request("/auth/session", { method: "POST", json: { local: { name: "alice" } } }), 400, /does not offer local login; it offers: wallet, idToken or accessToken/, "sign_in_method_not_offered");
  });
});

describe("the refresh cookie", () => {
  it("is HttpOnly, SameSite=Strict, for /auth only, lasts the idle period, and is Secure off localhost", async () => {
    const res = await h.request("/auth/session", { method: "POST", json: { accessToken: await privyToken("did:privy:cookie") } });
    const { token, attributes } = refreshCookie(res);
    expect(token).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(attributes.sort()).toEqual(["HttpOnly", "Max-Age=2592000", "Path=/auth", "SameSite=Strict"]);
    expect(res.headers.get("cache-control")).toBe("no-store");

    const deployed = await createHarness({ env: { PUBLIC_BASE_URL: "https://chat.example.com" } });
    try {
      const reply = await deployed.request("/auth/session", { method: "POST", json: { accessToken: await deployed.signIn("secure") } });
      expect(reply.status).toBe(200);
      expect(refreshCookie(reply).attributes).toContain("Secure");
    } finally {
      await deployed.close();
    }
  });

  it("rotates on every refresh; presenting a replaced one ends the whole session", async () => {
    const { session, cookie: first } = await signInWithPrivy("did:privy:rotation");
    const res = await refresh(first);
    expect(res.status).toBe(200);
    const second = refreshCookie(res).token;
    expect(second).not.toBe(first);
    const renewed = (await res.json()) as Session;
    expect(renewed.user.id).toBe(session.user.id);
    expect((await h.request("/me", { token: renewed.accessToken })).status).toBe(200);

    // A stolen copy of the first token comes back (past the grace period for a lost reply,
    // test/refresh-grace.test.ts): the session ends for everyone.
    h.clock.advance(REFRESH_GRACE_MS);
    try {
      const reused = await refresh(first);
      await expectError(reused, 401, /used twice, .*session was ended to protect the account: sign in again/, "refresh_token_reused");
      expect(refreshCookie(reused).attributes).toContain("Max-Age=0");
      await expectError(await refresh(second), 401, /the session has ended/, "refresh_token_invalid");
      // Its access tokens stop working here at once, not only at their expiry.
      await expectError(await h.request("/me", { token: renewed.accessToken }), 401, /session has ended .*: sign in again/);
    } finally {
      h.clock.set(START);
    }
  });

  it("only serves requests from the service's own origin", async () => {
    const { cookie } = await signInWithPrivy("did:privy:origin");
    await expectError(await refresh(cookie, null), 403, /must come from this service's own web page \(an Origin header of http:\/\/localhost:8787\)/, "origin_not_allowed");
    await expectError(await refresh(cookie, "https://evil.example"), 403, /https:\/\/evil\.example may not use this service's session cookie/, "origin_not_allowed");
    await expectError(await h.request("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: "null" } }), 403);
    expect((await refresh(cookie)).status).toBe(200); // untouched by the refused attempts
  });

  it("answers 401 without a cookie, and after the session sat unused past SESSION_IDLE_DAYS", async () => {
    await expectError(await refresh(undefined), 401, /no refresh cookie/, "refresh_token_missing");
    const { cookie } = await signInWithPrivy("did:privy:idle");
    h.clock.advance(30 * 86_400_000);
    try {
      await expectError(await refresh(cookie), 401, /ended after 30 days without use/, "session_expired");
    } finally {
      h.clock.set(START);
    }
  });

  it("renews an expired access token", async () => {
    const { session, cookie } = await signInWithPrivy("did:privy:expiry");
    h.clock.advance(15 * 60_000 + 10_000);
    try {
      await expectError(await h.request("/me", { token: session.accessToken }), 401, /access token has expired; refresh the session/);
      const renewed = (await (await refresh(cookie)).json()) as Session;
      expect((await h.request("/me", { token: renewed.accessToken })).status).toBe(200);
    } finally {
      h.clock.set(START);
    }
  });

  it("is refused on another origin of the service: its tokens name the origin they were issued for", async () => {
    const { session } = await signInWithPrivy("did:privy:elsewhere");
    const other = createApp(() => ({ ...h.deps, config: { ...h.deps.config, PUBLIC_BASE_URL: "https://other.example" } }));
    const res = await other.request("/me", { headers: { Authorization: `Bearer ${session.accessToken}` } });
    await expectError(res, 401, /issued for another origin/);
  });
});

describe("signing out", () => {
  it("ends the session, clears the cookie, and stops its access token", async () => {
    const { session, cookie } = await signInWithPrivy("did:privy:logout");
    const res = await h.request("/auth/logout", { method: "POST", headers: { Cookie: `refresh_token=${cookie}`, Origin: HARNESS_ORIGIN } });
    expect(res.status).toBe(204);
    expect(refreshCookie(res)).toEqual({ token: "", attributes: expect.arrayContaining(["Max-Age=0", "Path=/auth", "HttpOnly"]) });
    await expectError(await refresh(cookie), 401, /the session has ended/);
    await expectError(await h.request("/me", { token: session.accessToken }), 401);
    // Signing out without a session is no error.
    expect((await h.request("/auth/logout", { method: "POST", headers: { Origin: HARNESS_ORIGIN } })).status).toBe(204);
  });
});

describe("devices", () => {
  it("lists the person's sessions with a coarse device, signs one out, and all but this one", async () => {
    const did = "did:privy:devices";
    const laptop = await signInWithPrivy(did, {}, "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0");
    const phone = await signInWithPrivy(did, {}, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1");
    const tablet = await signInWithPrivy(did, {}, "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36");
    const list = async (token: string) =>
      ((await (await h.request("/me/sessions", { token })).json()) as { items: Array<{ id: string; device: string; method: string; current: boolean }> }).items;
    const items = await list(laptop.session.accessToken);
    expect(items.map((s) => [s.device, s.method, s.current]).sort()).toEqual([
      ["Chrome on Android", "provider", false],
      ["Firefox on Linux", "provider", true],
      ["Safari on iPhone", "provider", false],
    ]);

    const phoneId = items.find((s) => s.device === "Safari on iPhone")!.id;
    expect((await h.request(`/me/sessions/${phoneId}`, { method: "DELETE", token: laptop.session.accessToken })).status).toBe(204);
    await expectError(await refresh(phone.cookie), 401);
    await expectError(await h.request(`/me/sessions/${phoneId}`, { method: "DELETE", token: laptop.session.accessToken }), 404, /no such session ses_[A-Za-z0-9_-]{22} on this account/, "session_not_found");

    // Another person cannot see or end them.
    const stranger = await signInWithPrivy("did:privy:stranger");
    const tabletId = items.find((s) => s.device === "Chrome on Android")!.id;
    await expectError(await h.request(`/me/sessions/${tabletId}`, { method: "DELETE", token: stranger.session.accessToken }), 404);

    const ended = await h.request("/me/sessions", { method: "DELETE", token: laptop.session.accessToken });
    expect(await ended.json()).toEqual({ ended: 1 });
    await expectError(await refresh(tablet.cookie), 401);
    expect((await list(laptop.session.accessToken)).map((s) => s.device)).toEqual(["Firefox on Linux"]);
    expect((await refresh(laptop.cookie)).status).toBe(200);
  });

  it("lets an API key list sessions but not end them", async () => {
    const { session } = await signInWithPrivy("did:privy:keyholder");
    const created = await h.request("/keys", { method: "POST", token: session.accessToken, json: { name: "script" } });
    expect(created.status).toBe(201); // a session may manage API keys
    const { key } = (await created.json()) as { key: string };
    expect((await h.request("/me/sessions", { apiKey: key })).status).toBe(200);
    await expectError(await h.request("/me/sessions", { method: "DELETE", apiKey: key }), 403, /API keys cannot manage/, "api_key_not_allowed");
  });
});

describe("linked sign-in methods", () => {
  async function walletSession(wallet = newWallet()) {
    const message = await siweMessage(h, wallet.address);
    const res = await postWalletProof(h, message, await wallet.signMessage({ message }));
    expect(res.status).toBe(200);
    return { wallet, session: (await res.json()) as Session, cookie: refreshCookie(res).token };
  }
  const methods = async (token: string) =>
    ((await (await h.request("/me", { token })).json()) as { identities: Array<{ id: string; method: string; subject: string }> }).identities;

  it("adds the provider's account to a wallet's, and its bearer tokens then reach the wallet's account", async () => {
    const { session } = await walletSession();
    await h.request("/plants", { method: "POST", token: session.accessToken, json: { id: 7, name: "Calathea" } });
    const added = await h.request("/me/identities", { method: "POST", token: session.accessToken, json: { accessToken: await privyToken("did:privy:linked") } });
    expect(added.status).toBe(201);
    expect(await added.json()).toMatchObject({ method: "provider", issuer: "privy.io", subject: "did:privy:linked" });
    expect((await methods(session.accessToken)).map((m) => m.method)).toEqual(["wallet", "provider"]);

    // Again: already this account's.
    expect((await h.request("/me/identities", { method: "POST", token: session.accessToken, json: { accessToken: await privyToken("did:privy:linked") } })).status).toBe(200);

    // A session from the provider's token is the wallet's account.
    expect((await signInWithPrivy("did:privy:linked")).session.user.id).toBe(session.user.id);
    // So is the provider's bearer token, an API client's credential, still one round trip.
    const bearer = await privyToken("did:privy:linked");
    const before = h.roundTrips();
    const plants = await h.request("/plants", { token: bearer });
    expect(h.roundTrips() - before).toBe(1);
    expect(await plants.json()).toEqual([{ name: "Calathea" }]);

    // Another process (a restart, another instance) reads the link at start.
    const { client, db } = await openDatabaseFile(h.dbFile);
    try {
      const runtime = await createRuntime(parseConfig({ AUTH_JWKS_URL: h.idp.jwksUrl, AUTH_ISSUER: "privy.io", AUTH_AUDIENCE: PRIVY_APP, LOG_LEVEL: "error" }));
      const other = createApp(() => ({ ...runtime, db }));
      const res = await other.request("/plants", { headers: { Authorization: `Bearer ${bearer}` } });
      expect(await res.json()).toEqual([{ name: "Calathea" }]);
    } finally {
      client.close();
    }
  });

  it("refuses, with 409, an identity that signs in to another account", async () => {
    const { session: mine } = await walletSession();
    const { wallet: theirs } = await walletSession();
    await signInWithPrivy("did:privy:taken");
    await expectError(await h.request("/me/identities", { method: "POST", token: mine.accessToken, json: { accessToken: await privyToken("did:privy:taken") } }), 409, /already signs in to another account/, "identity_in_use");
    const message = await siweMessage(h, theirs.address);
    await expectError(await h.request("/me/identities", { method: "POST", token: mine.accessToken, json: { wallet: { message, signature: await theirs.signMessage({ message }) } } }), 409, new RegExp(`the wallet ${theirs.address} already signs in to another account`), "identity_in_use");
    // An identity first seen by a bearer token's write has an account of its own too.
    const apiOnly = await privyToken("did:privy:api-only");
    await h.request("/plants", { method: "POST", token: apiOnly, json: { id: 1, name: "x" } });
    await expectError(await h.request("/me/identities", { method: "POST", token: mine.accessToken, json: { accessToken: apiOnly } }), 409);
  });

  it("adds a second wallet to a provider account, and removes a method while another remains", async () => {
    const { session, cookie: providerCookie } = await signInWithPrivy("did:privy:two-wallets");
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    const added = await h.request("/me/identities", { method: "POST", token: session.accessToken, json: { wallet: { message, signature: await wallet.signMessage({ message }) } } });
    expect(added.status).toBe(201);
    const walletMethod = (await added.json()) as { id: string };
    const { session: viaWallet, cookie: walletCookie } = await walletSession(wallet);
    expect(viaWallet.user.id).toBe(session.user.id);

    // Removing the wallet ends the sessions it began; the provider's remain.
    expect((await h.request(`/me/identities/${walletMethod.id}`, { method: "DELETE", token: session.accessToken })).status).toBe(204);
    await expectError(await refresh(walletCookie), 401);
    expect((await refresh(providerCookie)).status).toBe(200);
    const [only] = await methods(session.accessToken);
    await expectError(await h.request(`/me/identities/${only!.id}`, { method: "DELETE", token: session.accessToken }), 409, /only sign-in method: add another before removing it/, "last_sign_in_method");
    await expectError(await h.request("/me/identities/idn_nope", { method: "DELETE", token: session.accessToken }), 404, /^no such sign-in method on this account$/, "identity_not_found");

    // The wallet is free again: it signs in to a new account of its own.
    const { session: fresh } = await walletSession(wallet);
    expect(fresh.user.id).not.toBe(session.user.id);
  });

  it("removes the method that created the account: its tokens stop reaching it, and it starts afresh", async () => {
    const did = "did:privy:founder";
    const { session } = await signInWithPrivy(did);
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    await h.request("/me/identities", { method: "POST", token: session.accessToken, json: { wallet: { message, signature: await wallet.signMessage({ message }) } } });
    const founder = (await methods(session.accessToken)).find((m) => m.subject === did)!;
    expect((await h.request(`/me/identities/${founder.id}`, { method: "DELETE", token: session.accessToken })).status).toBe(204);
    // The session that removed it goes on (its person is plainly there).
    expect((await h.request("/me", { token: session.accessToken })).status).toBe(200);

    // The account lives on through the wallet, which is now its main identity.
    const { session: viaWallet } = await walletSession(wallet);
    expect(viaWallet.user.id).toBe(session.user.id);
    const me = (await (await h.request("/me", { token: viaWallet.accessToken })).json()) as { identity: { issuer: string } };
    expect(me.identity.issuer).toBe("eip155");
    // The provider's bearer token no longer reaches it.
    await expectError(await h.request("/plants", { token: await privyToken(did) }), 401, /removed from its account/);
    // Signing in with it again starts a new account.
    const { session: afresh } = await signInWithPrivy(did);
    expect(afresh.user.id).not.toBe(session.user.id);
    expect((await (await h.request("/plants", { token: await privyToken(did) })).json())).toEqual([]);
  });

  it("is for the person only: an API key gets 403", async () => {
    const { session } = await walletSession();
    const { key } = (await (await h.request("/keys", { method: "POST", token: session.accessToken, json: {} })).json()) as { key: string };
    await expectError(await h.request("/me/identities", { method: "POST", apiKey: key, json: { accessToken: await privyToken("did:privy:nope") } }), 403);
  });
});

describe("local login sessions", () => {
  let local: Harness;
  beforeAll(async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const LOCAL_LOGIN_PRIVATE_JWK = JSON.stringify({ ...(await exportJWK(privateKey)), kid: "local-test" });
    local = await createHarness({ env: { AUTH_JWKS_URL: "", AUTH_ISSUER: "", AUTH_AUDIENCE: "", LOCAL_LOGIN_PRIVATE_JWK } });
  });
  afterAll(() => local.close());

  it("signs in with a name, the same account as POST /auth/local's token", async () => {
    const res = await local.request("/auth/session", { method: "POST", json: { local: { name: "  Alice  " } } });
    expect(res.status).toBe(200);
    const session = (await res.json()) as Session;
    expect(session.user.name).toBe("Alice");
    const { token } = (await (await local.request("/auth/local", { method: "POST", json: { name: "Alice" } })).json()) as { token: string };
    expect(((await (await local.request("/me", { token })).json()) as { id: string }).id).toBe(session.user.id);
    const config = (await (await local.request("/client-config")).json()) as { auth: { mode: string }; signIn: { methods: Array<{ method: string }> } };
    expect(config.auth.mode).toBe("local");
    expect(config.signIn.methods.map((m) => m.method)).toEqual(["wallet", "local"]);
    await expectError(await local.request("/auth/session", { method: "POST", json: { accessToken: token } }), 400, /does not offer an identity provider/);
  });
});

describe("/client-config with a bare JWKS (Privy, Dynamic, Web3Auth)", () => {
  it("offers the wallet and the provider's tokens, never a name form", async () => {
    const config = (await (await h.request("/client-config")).json()) as { auth: { mode: string }; signIn: { methods: Array<{ method: string; name?: string }>; origin: string } };
    expect(config.auth.mode).toBe("token");
    expect(config.signIn.methods).toEqual([{ method: "wallet" }, { method: "provider-token", name: "privy.io" }]);
    expect(config.signIn).toMatchObject({ origin: HARNESS_ORIGIN });
    await expectError(await h.request("/auth/local", { method: "POST", json: { name: "alice" } }), 404);
  });
});
