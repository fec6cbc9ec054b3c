import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError as expectErrorBody } from "./support/expect-error";

/** A key made without limits, as GET /keys shows it. */
const NO_LIMITS = { dailyCreditLimit: null, expiresAt: null, models: null, creditsUsedToday: 0 };

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

interface CreatedKey {
  id: string;
  name: string;
  key: string;
  prefix: string;
  createdAt: string;
}
interface ListedKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** Every secret handed out in this file, to prove none of them leaks. */
const secrets: string[] = [];

async function expectError(res: Response, status: number, pattern?: RegExp) {
  const body = await expectErrorBody(res, status, pattern);
  for (const secret of secrets) expect(body.message).not.toContain(secret);
  return body;
}

async function signIn(name: string) {
  const token = await h.signIn(name);
  secrets.push(token);
  return token;
}
const create = (credential: { token?: string; apiKey?: string }, json: unknown = {}) =>
  h.request("/keys", { method: "POST", ...credential, json });
async function createKey(token: string, name?: string): Promise<CreatedKey> {
  const res = await create({ token }, name === undefined ? {} : { name });
  expect(res.status).toBe(201);
  const created = (await res.json()) as CreatedKey;
  secrets.push(created.key);
  return created;
}
async function list(credential: { token?: string; apiKey?: string }): Promise<ListedKey[]> {
  const res = await h.request("/keys", credential);
  expect(res.status).toBe(200);
  return (await res.json()) as ListedKey[];
}
const revoke = (credential: { token?: string; apiKey?: string }, id: string) =>
  h.request(`/keys/${encodeURIComponent(id)}`, { method: "DELETE", ...credential });
const whoAmI = async (credential: { token?: string; apiKey?: string }) => {
  const res = await h.request("/me", credential);
  return { status: res.status, id: res.status === 200 ? ((await res.json()) as { id: string }).id : undefined };
};

describe("POST /keys", () => {
  it("returns a new key once: 201 with id, name, key, prefix and createdAt", async () => {
    const token = await signIn("creator");
    const res = await create({ token }, { name: "laptop CLI" });
    expect(res.status).toBe(201);
    const body = (await res.json()) as CreatedKey;
    secrets.push(body.key);
    expect(Object.keys(body).sort()).toEqual(["createdAt", "dailyCreditLimit", "expiresAt", "id", "key", "models", "name", "prefix"]);
    expect(body).toMatchObject({ dailyCreditLimit: null, expiresAt: null, models: null });
    expect(body.name).toBe("laptop CLI");
    expect(body.createdAt).toBe(h.clock.now().toISOString());
    // sk_ then base64url: at least 22 characters is at least 128 random bits.
    expect(body.key).toMatch(/^sk_[A-Za-z0-9_-]{22,}$/);
    expect(body.key.length - 3).toBeGreaterThanOrEqual(22);
    expect(body.key.startsWith(body.prefix)).toBe(true);
    expect(body.prefix).toMatch(/^sk_.{4,}$/);
    expect(body.prefix.length).toBeLessThan(body.key.length - 22);
  });

  it("names a key 'default' when no name is given, with or without a body", async () => {
    const token = await signIn("unnamed");
    expect((await createKey(token)).name).toBe("default");
    const res = await h.request("/keys", { method: "POST", token });
    expect(res.status).toBe(201);
    const created = (await res.json()) as CreatedKey;
    secrets.push(created.key);
    expect(created.name).toBe("default");
  });

  it("gives every key a different secret and id", async () => {
    const token = await signIn("many");
    const keys = await Promise.all(Array.from({ length: 5 }, () => createKey(token)));
    expect(new Set(keys.map((k) => k.key)).size).toBe(5);
    expect(new Set(keys.map((k) => k.id)).size).toBe(5);
  });

  it("works on the first request of a new user", async () => {
    const token = await signIn("brand new");
    const created = await createKey(token, "first");
    const jwtUser = await whoAmI({ token });
    expect(await whoAmI({ apiKey: created.key })).toEqual(jwtUser);
  });

  it.each([
    ["an empty name", { name: "" }, /name: must be 1\.\.100 characters/],
    ["a blank name", { name: "  " }, /name: must be 1\.\.100 characters/],
    ["a 101-character name", { name: "k".repeat(101) }, /name: must be 1\.\.100 characters/],
    ["a name that is not a string", { name: 7 }, /name: must be 1\.\.100 characters/],
    ["an unknown field", { name: "x", scopes: ["all"] }, /unknown field "scopes"/],
  ])("answers 400 naming the field for %s", async (_label, body, pattern) => {
    const token = await signIn("bad names");
    await expectError(await create({ token }, body), 400, pattern);
    expect(await list({ token })).toEqual([]);
  });

  it("keeps a name of exactly 100 characters, trimmed", async () => {
    const token = await signIn("long name");
    expect((await createKey(token, ` ${"k".repeat(100)} `)).name).toBe("k".repeat(100));
  });

  it("allows 25 live keys per user, then answers 400 until one is revoked", async () => {
    const token = await signIn("collector");
    const keys: CreatedKey[] = [];
    for (let i = 0; i < 25; i++) keys.push(await createKey(token, `key ${i}`));
    await expectError(await create({ token }, { name: "one too many" }), 400, /already have 25 API keys.*revoke one/);
    expect(await list({ token })).toHaveLength(25);
    expect((await revoke({ token }, keys[0]!.id)).status).toBe(204);
    expect((await createKey(token, "room again")).name).toBe("room again");
    await expectError(await create({ token }), 400, /25/);
  });

  it("never exceeds 25 keys under concurrent creates", async () => {
    const token = await signIn("racer");
    await whoAmI({ token });
    const replies = await Promise.all(Array.from({ length: 32 }, () => create({ token })));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(25);
    expect(statuses.filter((s) => s === 400)).toHaveLength(7);
    for (const r of replies) if (r.status === 201) secrets.push(((await r.json()) as CreatedKey).key);
    expect(await list({ token })).toHaveLength(25);
  });
});

describe("authenticating with an API key", () => {
  it("accepts the key in X-API-Key and as a Bearer token, as the same user as the JWT", async () => {
    const token = await signIn("bearer");
    const { key } = await createKey(token);
    const jwtUser = await whoAmI({ token });
    expect(jwtUser.status).toBe(200);
    expect(await whoAmI({ apiKey: key })).toEqual(jwtUser);
    expect(await whoAmI({ token: key })).toEqual(jwtUser);
  });

  it("answers 401 with a Bearer challenge for an unknown key, in either header", async () => {
    const unknown = "sk_ThisKeyWasNeverIssuedByTheService00";
    secrets.push(unknown);
    for (const credential of [{ apiKey: unknown }, { token: unknown }]) {
      const res = await h.request("/keys", credential);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      await expectError(res, 401, /API key is invalid or has been revoked/);
    }
  });

  it("answers 401 for an X-API-Key that is not an API key at all", async () => {
    const token = await signIn("confused");
    await expectError(await h.request("/me", { headers: { "X-API-Key": token } }), 401, /X-API-Key/);
  });
});

describe("GET /keys", () => {
  it("lists the caller's keys newest first, without their secrets", async () => {
    const token = await signIn("lister");
    const older = await createKey(token, "older");
    h.clock.advance(1000);
    const newer = await createKey(token, "newer");
    const res = await h.request("/keys", { token });
    const text = await res.text();
    expect(text).not.toContain(older.key);
    expect(text).not.toContain(newer.key);
    expect(JSON.parse(text)).toEqual([
      { id: newer.id, name: "newer", prefix: newer.prefix, createdAt: newer.createdAt, lastUsedAt: null, ...NO_LIMITS },
      { id: older.id, name: "older", prefix: older.prefix, createdAt: older.createdAt, lastUsedAt: null, ...NO_LIMITS },
    ]);
  });

  it("is open to API keys, which see their owner's keys", async () => {
    const token = await signIn("key lister");
    const created = await createKey(token, "the key");
    expect((await list({ apiKey: created.key })).map((k) => k.id)).toEqual([created.id]);
  });

  it("answers an empty list to a user who has never made a key", async () => {
    expect(await list({ token: await signIn("keyless") })).toEqual([]);
  });

  it("answers 401 without credentials", async () => {
    await expectError(await h.request("/keys"), 401);
  });

  it("records lastUsedAt when a key is used, at most once a minute", async () => {
    const token = await signIn("user of keys");
    const { id, key } = await createKey(token);
    const lastUsed = async () => (await list({ token })).find((k) => k.id === id)!.lastUsedAt;
    expect(await lastUsed()).toBeNull();

    const firstUse = h.clock.now().toISOString();
    expect((await h.request("/me", { apiKey: key })).status).toBe(200);
    expect(await lastUsed()).toBe(firstUse);

    h.clock.advance(30_000);
    expect((await h.request("/me", { apiKey: key })).status).toBe(200);
    expect(await lastUsed()).toBe(firstUse);

    h.clock.advance(31_000);
    const laterUse = h.clock.now().toISOString();
    expect((await h.request("/me", { token: key })).status).toBe(200);
    expect(await lastUsed()).toBe(laterUse);
  });
});

describe("DELETE /keys/{id}", () => {
  it("revokes a key: 204, and the very next request with it is 401", async () => {
    const token = await signIn("revoker");
    const keep = await createKey(token, "keep");
    const drop = await createKey(token, "drop");
    expect((await whoAmI({ apiKey: drop.key })).status).toBe(200);
    const res = await revoke({ token }, drop.id);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    await expectError(await h.request("/me", { apiKey: drop.key }), 401, /revoked/);
    await expectError(await h.request("/me", { token: drop.key }), 401, /revoked/);
    expect((await list({ token })).map((k) => k.id)).toEqual([keep.id]);
    expect((await whoAmI({ apiKey: keep.key })).status).toBe(200);
  });

  it("answers 404 for a key already revoked or never issued", async () => {
    const token = await signIn("twice");
    const { id } = await createKey(token);
    expect((await revoke({ token }, id)).status).toBe(204);
    await expectError(await revoke({ token }, id), 404, new RegExp(`API key ${id} not found`));
    await expectError(await revoke({ token }, "key_doesNotExist"), 404, /not found/);
  });

  it("does not echo a secret pasted in place of an id", async () => {
    const token = await signIn("paster");
    const { key } = await createKey(token);
    const body = await expectError(await revoke({ token }, key), 404, /use an id that GET \/keys lists/);
    expect(body.message).not.toContain(key);
    expect((await whoAmI({ apiKey: key })).status).toBe(200);
  });
});

describe("API keys cannot manage API keys", () => {
  it("answers 403 when an API key tries to create a key, in either header", async () => {
    const token = await signIn("delegator");
    const { key } = await createKey(token);
    await expectError(await create({ apiKey: key }, { name: "spawn" }), 403, /API keys cannot manage API keys/);
    await expectError(await create({ token: key }, { name: "spawn" }), 403, /API keys cannot manage API keys/);
    expect(await list({ token })).toHaveLength(1);
  });

  it("answers 403 when an API key tries to revoke a key, itself included, and the key stays", async () => {
    const token = await signIn("self revoker");
    const self = await createKey(token, "self");
    const other = await createKey(token, "other");
    await expectError(await revoke({ apiKey: self.key }, self.id), 403, /sign in/);
    await expectError(await revoke({ token: self.key }, other.id), 403);
    expect(await list({ token })).toHaveLength(2);
    expect((await whoAmI({ apiKey: self.key })).status).toBe(200);
  });
});

describe("isolation between users", () => {
  it("keeps each user's keys their own on every endpoint", async () => {
    const alice = await signIn("iso-alice");
    const bob = await signIn("iso-bob");
    const alicesKey = await createKey(alice, "alice's");
    const bobsKey = await createKey(bob, "bob's");

    // Listing, by JWT and by key, shows only one's own.
    expect((await list({ token: bob })).map((k) => k.id)).toEqual([bobsKey.id]);
    expect((await list({ apiKey: bobsKey.key })).map((k) => k.id)).toEqual([bobsKey.id]);
    // Revoking another user's key id is 404, and the key keeps working.
    await expectError(await revoke({ token: bob }, alicesKey.id), 404, /not found/);
    expect(await whoAmI({ apiKey: alicesKey.key })).toEqual(await whoAmI({ token: alice }));
    // A key acts as its owner only.
    expect((await whoAmI({ apiKey: bobsKey.key })).id).not.toBe((await whoAmI({ token: alice })).id);
    // One user's key count does not limit another's.
    expect((await list({ token: alice })).map((k) => k.id)).toEqual([alicesKey.id]);
  });
});

describe("secrets at rest and in logs", () => {
  it("stores no plaintext key in the database file", async () => {
    const token = await signIn("at rest");
    const created = await Promise.all([createKey(token, "a"), createKey(token, "b"), createKey(token, "c")]);
    expect((await whoAmI({ apiKey: created[0]!.key })).status).toBe(200);
    const bytes = ["", "-wal", "-journal"]
      .map((suffix) => `${h.dbFile}${suffix}`)
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file).toString("latin1"))
      .join("\n");
    // The file does hold this user's keys (their visible prefixes), just not their secrets.
    expect(bytes).toContain(created[0]!.prefix);
    for (const { key, prefix } of created) {
      expect(bytes).not.toContain(key);
      expect(bytes).not.toContain(key.slice(prefix.length));
    }
  });

  it("writes no token or key to the logs", () => {
    expect(secrets.length).toBeGreaterThan(20);
    const logs = h.logs.text();
    for (const secret of secrets) expect(logs).not.toContain(secret);
  });
});
