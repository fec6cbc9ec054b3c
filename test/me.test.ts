import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

interface Profile {
  id: string;
  name: string;
  avatarUrl: string | null;
  preferences: { theme: string; defaultModel: string; voiceInput: boolean; language: string };
  presets: Array<{ name: string; instructions: string }>;
  identity: { issuer: string; subject: string; email?: string; wallet?: string };
  createdAt: string;
}

const me = async (credential: { token?: string; apiKey?: string }) => {
  const res = await h.request("/me", credential);
  expect(res.status).toBe(200);
  return (await res.json()) as Profile;
};
const patch = (token: string, json: unknown) => h.request("/me", { method: "PATCH", token, json });
const patchOk = async (token: string, json: unknown) => {
  const res = await patch(token, json);
  expect(res.status).toBe(200);
  return (await res.json()) as Profile;
};
const createKey = async (token: string) => {
  const res = await h.request("/keys", { method: "POST", token, json: {} });
  expect(res.status).toBe(201);
  return ((await res.json()) as { key: string }).key;
};

describe("GET /me", () => {
  it("creates the user on first sight, seeded from the token, with default preferences", async () => {
    const token = await h.signIn("Ada Lovelace", { email: "ada@example.com" });
    const profile = await me({ token });
    expect(profile).toEqual({
      id: expect.stringMatching(/^usr_[A-Za-z0-9_-]{22}$/),
      name: "Ada Lovelace",
      avatarUrl: null,
      preferences: { theme: "auto", defaultModel: "svc-70b", voiceInput: true, language: "en" },
      presets: [],
      identity: { issuer: h.idp.issuer, subject: "user:Ada Lovelace", email: "ada@example.com" },
      identities: [
        {
          id: expect.stringMatching(/^idn_[A-Za-z0-9_-]{22}$/),
          method: "provider",
          issuer: h.idp.issuer,
          subject: "user:Ada Lovelace",
          label: "ada@example.com",
          createdAt: h.clock.now().toISOString(),
        },
      ],
      createdAt: h.clock.now().toISOString(),
      role: "user",
    });
  });

  it("maps the same issuer and subject to the same user, created once", async () => {
    const first = await me({ token: await h.signIn("stable") });
    h.clock.advance(3_600_000);
    const again = await me({ token: await h.signIn("stable") });
    expect(again.id).toBe(first.id);
    expect(again.createdAt).toBe(first.createdAt);
    const other = await me({ token: await h.signIn("someone else") });
    expect(other.id).not.toBe(first.id);
  });

  it("seeds the name from the e-mail when the token has no name", async () => {
    const token = await h.idp.sign("email-only", { email: "grace.hopper@example.com" });
    const profile = await me({ token });
    expect(profile.name).toBe("grace.hopper");
    expect(profile.identity).toEqual({ issuer: h.idp.issuer, subject: "email-only", email: "grace.hopper@example.com" });
  });

  it("keeps the wallet of a wallet login and names the user after it", async () => {
    const wallet = "0x52908400098527886E0F7030069857D2E4169EE7";
    const token = await h.idp.sign("did:wallet", { verified_credentials: [{ format: "blockchain", address: wallet }] });
    const profile = await me({ token });
    expect(profile.identity.wallet).toBe(wallet);
    expect(profile.identity.email).toBeUndefined();
    expect(profile.name).toBe("0x5290…9EE7");
  });

  it("refreshes identity details from a newer token but keeps the name the user chose", async () => {
    const first = await h.signIn("mover", { email: "old@example.com" });
    await patchOk(first, { name: "My Chosen Name" });
    const later = await h.signIn("mover", { email: "new@example.com", wallet_address: "0xabc123" });
    const profile = await me({ token: later });
    expect(profile.identity.email).toBe("new@example.com");
    expect(profile.identity.wallet).toBe("0xabc123");
    expect(profile.name).toBe("My Chosen Name");
  });

  it("does not erase an e-mail when a later token does not carry it", async () => {
    await me({ token: await h.signIn("keeper", { email: "keep@example.com" }) });
    const profile = await me({ token: await h.idp.sign("user:keeper", {}) });
    expect(profile.identity.email).toBe("keep@example.com");
  });

  it("answers an API-key caller with the profile of the key's owner", async () => {
    const token = await h.signIn("key owner");
    const owner = await patchOk(token, { name: "Owner", preferences: { theme: "dark" } });
    const key = await createKey(token);
    expect(await me({ apiKey: key })).toEqual(owner);
    expect(await me({ token: key })).toEqual(owner);
  });

  it("answers 401 with a Bearer challenge without credentials or with a bad token", async () => {
    const none = await h.request("/me");
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    await expectError(none, 401, /authentication required/);
    const expired = await h.idp.sign("user:late", {}, { expiresIn: Math.floor(h.clock.now().getTime() / 1000) - 3600 });
    const body = await expectError(await h.request("/me", { token: expired }), 401);
    expect(body.message).not.toContain(expired);
    await expectError(await h.request("/me", { token: "not.a.jwt" }), 401, /access token/);
  });
});

describe("PATCH /me", () => {
  it("creates the user on first sight and applies the update in the same request", async () => {
    const token = await h.signIn("first patch");
    const profile = await patchOk(token, { name: "Patched First" });
    expect(profile.name).toBe("Patched First");
    expect((await me({ token })).name).toBe("Patched First");
  });

  it("updates name, avatar and preferences, and GET /me shows them", async () => {
    const token = await h.signIn("updater");
    const updated = await patchOk(token, {
      name: "  Padded Name  ",
      avatarUrl: "https://cdn.example.com/a.png?size=64",
      preferences: { theme: "light", defaultModel: "gpt-4o-mini", voiceInput: true, language: "pt-BR" },
    });
    expect(updated).toMatchObject({
      name: "Padded Name",
      avatarUrl: "https://cdn.example.com/a.png?size=64",
      preferences: { theme: "light", defaultModel: "gpt-4o-mini", voiceInput: true, language: "pt-BR" },
    });
    expect(await me({ token })).toEqual(updated);
  });

  it("merges partial updates and leaves absent fields alone", async () => {
    const token = await h.signIn("merger");
    await patchOk(token, { name: "Merger", avatarUrl: "http://example.com/m.png", preferences: { theme: "dark", language: "fr" } });
    const after = await patchOk(token, { preferences: { voiceInput: true } });
    expect(after.name).toBe("Merger");
    expect(after.avatarUrl).toBe("http://example.com/m.png");
    expect(after.preferences).toEqual({ theme: "dark", defaultModel: "svc-70b", voiceInput: true, language: "fr" });
  });

  it("keeps both of two concurrent updates to different preferences", async () => {
    const token = await h.signIn("concurrent prefs");
    await me({ token });
    await Promise.all([patchOk(token, { preferences: { theme: "light" } }), patchOk(token, { preferences: { language: "de" } })]);
    expect((await me({ token })).preferences).toMatchObject({ theme: "light", language: "de" });
  });

  it("clears the avatar with null", async () => {
    const token = await h.signIn("clearer");
    await patchOk(token, { avatarUrl: "https://example.com/x.png" });
    expect((await patchOk(token, { avatarUrl: null })).avatarUrl).toBeNull();
  });

  it("stores a language tag in its canonical form", async () => {
    const token = await h.signIn("linguist");
    expect((await patchOk(token, { preferences: { language: "zh-hant-tw" } })).preferences.language).toBe("zh-Hant-TW");
  });

  it("accepts an empty update and returns the profile unchanged", async () => {
    const token = await h.signIn("idle");
    const before = await me({ token });
    expect(await patchOk(token, {})).toEqual(before);
  });

  it("accepts a name of exactly 100 characters, emoji counted as one each, and a 2048-character avatar URL", async () => {
    const token = await h.signIn("limits");
    expect((await patchOk(token, { name: "n".repeat(100) })).name).toHaveLength(100);
    expect(Array.from((await patchOk(token, { name: "🌿".repeat(100) })).name)).toHaveLength(100);
    const url = `https://example.com/${"a".repeat(2048 - "https://example.com/".length)}`;
    expect((await patchOk(token, { avatarUrl: url })).avatarUrl).toBe(url);
  });

  it.each([
    ["an empty name", { name: "" }, /name: must be 1\.\.100 characters/],
    ["a blank name", { name: "   " }, /name: must be 1\.\.100 characters/],
    ["a 101-character name", { name: "n".repeat(101) }, /name: must be 1\.\.100 characters/],
    ["a name with a control character", { name: "bad\u0007name" }, /name: must be/],
    ["a name that is not a string", { name: 42 }, /name: must be 1\.\.100 characters/],
    ["a javascript: avatar URL", { avatarUrl: "javascript:alert(1)" }, /avatarUrl: must be an http\(s\) URL/],
    ["a data: avatar URL", { avatarUrl: "data:image/png;base64,iVBORw0KGgo=" }, /avatarUrl: must be an http\(s\) URL/],
    ["an ftp: avatar URL", { avatarUrl: "ftp://example.com/a.png" }, /avatarUrl: must be an http\(s\) URL/],
    ["a relative avatar URL", { avatarUrl: "/a.png" }, /avatarUrl/],
    ["an avatar URL with credentials", { avatarUrl: "https://user:pw@example.com/a.png" }, /avatarUrl/],
    ["an avatar URL with whitespace", { avatarUrl: "https://example.com/a b.png" }, /avatarUrl/],
    ["a 2049-character avatar URL", { avatarUrl: `https://example.com/${"a".repeat(2029)}` }, /avatarUrl: must be .* at most 2048/],
    ["an unknown theme", { preferences: { theme: "blue" } }, /preferences\.theme: must be light, dark or auto/],
    ["an unknown model", { preferences: { defaultModel: "gpt-9" } }, /preferences\.defaultModel: must be a known model id: svc-70b/],
    ["a voiceInput that is not a boolean", { preferences: { voiceInput: "yes" } }, /preferences\.voiceInput: must be true or false/],
    ["a language that is not BCP 47", { preferences: { language: "not a tag!" } }, /preferences\.language: must be a BCP 47 language tag/],
    ["a language with an underscore", { preferences: { language: "en_US" } }, /preferences\.language/],
    ["an unknown preference", { preferences: { fontSize: 14 } }, /preferences: unknown field "fontSize"/],
    ["null preferences", { preferences: null }, /preferences/],
    ["an unknown top-level field", { email: "me@example.com" }, /unknown field "email"/],
    ["a body that is not an object", [1, 2], /request body/],
    ["a preset without instructions", { presets: [{ name: "Coach" }] }, /presets\.0\.instructions: is required/],
    ["a preset with blank instructions", { presets: [{ name: "Coach", instructions: "  " }] }, /presets\.0\.instructions/],
    ["a preset with a 101-character name", { presets: [{ name: "n".repeat(101), instructions: "x" }] }, /presets\.0\.name: must be 1\.\.100/],
    ["two presets of the same name", { presets: [{ name: "A", instructions: "x" }, { name: "A", instructions: "y" }] }, /presets\.1\.name: "A" is the name of another preset/],
    ["a preset with an unknown field", { presets: [{ name: "A", instructions: "x", model: "svc-70b" }] }, /presets\.0: unknown field "model"/],
    ["51 presets", { presets: Array.from({ length: 51 }, (_, i) => ({ name: `p${i}`, instructions: "x" })) }, /presets: must hold at most 50 presets/],
  ])("answers 400 naming the field for %s", async (_label, body, pattern) => {
    const token = await h.signIn("validator");
    await expectError(await patch(token, body), 400, pattern);
  });

  it("changes nothing when any field of the update is invalid", async () => {
    const token = await h.signIn("all or nothing");
    await patchOk(token, { name: "Kept" });
    await expectError(await patch(token, { name: "Lost", preferences: { theme: "neon" } }), 400, /preferences\.theme/);
    const profile = await me({ token });
    expect(profile.name).toBe("Kept");
    expect(profile.preferences.theme).toBe("auto");
  });

  it("treats a missing body as an empty update and answers 415 for a body that is not JSON", async () => {
    const token = await h.signIn("no body");
    await patchOk(token, { name: "Unchanged" });
    const empty = await h.request("/me", { method: "PATCH", token });
    expect(empty.status).toBe(200);
    expect(((await empty.json()) as Profile).name).toBe("Unchanged");
    const res = await h.request("/me", { method: "PATCH", token, headers: { "Content-Type": "text/plain" }, body: "name=x" });
    await expectError(res, 415);
  });

  it("keeps presets: the list sent replaces the list kept, names and instructions trimmed", async () => {
    const token = await h.signIn("preset keeper");
    const presets = [
      { name: "  Gardening coach ", instructions: "You are a patient gardening coach.\nAnswer in metric units. " },
      { name: "Brief", instructions: "Answer in one sentence." },
    ];
    expect((await patchOk(token, { presets })).presets).toEqual([
      { name: "Gardening coach", instructions: "You are a patient gardening coach.\nAnswer in metric units." },
      { name: "Brief", instructions: "Answer in one sentence." },
    ]);
    expect((await patchOk(token, { name: "Other change" })).presets).toHaveLength(2);
    expect((await me({ token })).presets.map((p) => p.name)).toEqual(["Gardening coach", "Brief"]);
    expect((await patchOk(token, { presets: [] })).presets).toEqual([]);
  });

  it("lets an API key update its owner's profile", async () => {
    const token = await h.signIn("key patcher");
    const key = await createKey(token);
    const res = await h.request("/me", { method: "PATCH", apiKey: key, json: { name: "Via Key" } });
    expect(res.status).toBe(200);
    expect((await me({ token })).name).toBe("Via Key");
  });

  it("answers 401 without credentials", async () => {
    await expectError(await h.request("/me", { method: "PATCH", json: { name: "x" } }), 401);
  });
});

describe("isolation between users", () => {
  it("shows and changes only the caller's own profile", async () => {
    const alice = await h.signIn("iso-alice");
    const bob = await h.signIn("iso-bob");
    await patchOk(alice, { name: "Alice", preferences: { theme: "dark" } });
    await patchOk(bob, { name: "Bob", avatarUrl: "https://example.com/bob.png" });
    const a = await me({ token: alice });
    const b = await me({ token: bob });
    expect(a).toMatchObject({ name: "Alice", avatarUrl: null, preferences: { theme: "dark" } });
    expect(b).toMatchObject({ name: "Bob", avatarUrl: "https://example.com/bob.png", preferences: { theme: "auto" } });
    expect(a.id).not.toBe(b.id);
    const bobsKey = await createKey(bob);
    await h.request("/me", { method: "PATCH", apiKey: bobsKey, json: { name: "Bob via key" } });
    expect((await me({ token: alice })).name).toBe("Alice");
  });
});

describe("secrets", () => {
  it("never writes a token or an API key to the logs", async () => {
    const token = await h.signIn("quiet");
    const key = await createKey(token);
    await h.request("/me", { apiKey: key });
    await h.request("/me", { apiKey: `${key}x` });
    await h.request("/me", { token: `${token}x` });
    const logs = h.logs.text();
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(key);
  });
});

describe("OpenAPI document", () => {
  it("describes the profile and key endpoints", async () => {
    const res = await h.request("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths["/me"] ?? {}).sort()).toEqual(["delete", "get", "patch"]);
    expect(Object.keys(doc.paths["/keys"] ?? {}).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/keys/{id}"] ?? {})).toEqual(["delete"]);
  });
});
