import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addMessages, seedUser } from "./support/context-fixtures";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

interface Link {
  token: string;
  url: string;
  createdAt: string;
  expiresAt: string | null;
}
interface Shared {
  name: string;
  messages: Array<{ role: string; content: string; model?: string; createdAt: string }>;
  sharedAt: string;
  expiresAt: string | null;
}
interface ShareList {
  items: Array<Link & { contextId: string; name: string }>;
  nextCursor: string | null;
}

let h: Harness;
let alice: string;
let aliceId: string;
let bob: string;
beforeAll(async () => {
  h = await createHarness();
  alice = await h.signIn("alice");
  bob = await h.signIn("bob");
  aliceId = await seedUser(h.db, h.idp.issuer, "alice");
});
afterAll(() => h.close());

async function createContext(token: string, name: string): Promise<string> {
  const res = await h.request("/contexts", { method: "POST", token, json: { name } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function share(token: string, contextId: string, body?: unknown): Promise<Link> {
  const res = await h.request(`/contexts/${contextId}/share`, { method: "POST", token, json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as Link;
}

async function readShared(token: string): Promise<Shared> {
  const res = await h.request(`/shared/${token}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Shared;
}

const listShares = async (token: string, query = ""): Promise<ShareList> =>
  (await (await h.request(`/shares${query}`, { token })).json()) as ShareList;

/** A context of Alice's with a two-message exchange. */
async function conversation(name = "Repotting") {
  const id = await createContext(alice, name);
  await addMessages(
    h.db,
    aliceId,
    id,
    [{ content: "When should I repot?" }, { content: "In spring.", role: "assistant", model: "svc-70b" }],
    new Date("2026-11-22T10:00:00.000Z"),
  );
  return id;
}

describe("POST /contexts/{id}/share", () => {
  it("returns a 128-bit token and a link to the client's share page on the configured origin, whatever the Host header says", async () => {
    h.clock.set("2026-11-22T12:00:00.000Z");
    const id = await conversation();
    const res = await h.request(`/contexts/${id}/share`, { method: "POST", token: alice, headers: { Host: "evil.example" } });
    expect(res.status).toBe(201);
    const link = (await res.json()) as Link;
    expect(link).toEqual({
      token: expect.stringMatching(/^shr_[\w-]{22}$/),
      // No PUBLIC_BASE_URL and no address from the entry: the configured port on localhost.
      url: `http://localhost:8787/s/${link.token}`,
      createdAt: "2026-11-22T12:00:00.000Z",
      expiresAt: null,
    });
    // 22 base64url characters carry 132 bits, of which the 16 random bytes are 128.
    expect(Buffer.from(link.token.slice(4), "base64url")).toHaveLength(16);
  });

  it("builds the link from PUBLIC_BASE_URL when it is set", async () => {
    const other = await createHarness({ env: { PUBLIC_BASE_URL: "https://chat.example.com/app/" } });
    try {
      const token = await other.signIn("erin");
      const res = await other.request("/contexts", { method: "POST", token, json: { name: "x" } });
      const { id } = (await res.json()) as { id: string };
      const link = (await (await other.request(`/contexts/${id}/share`, { method: "POST", token })).json()) as Link;
      expect(link.url).toBe(`https://chat.example.com/app/s/${link.token}`);
    } finally {
      await other.close();
    }
  });

  it("snapshots the context: later messages and renames do not show", async () => {
    const id = await conversation("Before");
    const link = await share(alice, id);
    await addMessages(h.db, aliceId, id, [{ content: "A later question" }], new Date("2026-11-22T11:00:00.000Z"));
    await h.request(`/contexts/${id}`, { method: "PATCH", token: alice, json: { name: "After" } });

    expect(await readShared(link.token)).toEqual({
      name: "Before",
      messages: [
        { role: "user", content: "When should I repot?", createdAt: "2026-11-22T10:00:00.000Z" },
        { role: "assistant", content: "In spring.", model: "svc-70b", createdAt: "2026-11-22T10:00:00.001Z" },
      ],
      sharedAt: link.createdAt,
      expiresAt: null,
    });
  });

  it("replaces the snapshot under the same token when shared again", async () => {
    const id = await conversation("First");
    const first = await share(alice, id);
    await addMessages(h.db, aliceId, id, [{ content: "Now included" }], new Date("2026-11-22T11:00:00.000Z"));
    h.clock.advance(1_000);
    const second = await share(alice, id);
    expect(second.token).toBe(first.token);
    expect(second.createdAt).not.toBe(first.createdAt);
    const shared = await readShared(first.token);
    expect(shared.messages.map((m) => m.content)).toEqual(["When should I repot?", "In spring.", "Now included"]);
    expect(shared.sharedAt).toBe(second.createdAt);
  });

  it("takes a missing body, an empty one sent as JSON, or {} as no options", async () => {
    const id = await createContext(alice, "Bodiless");
    const headers = { "Content-Type": "application/json" };
    for (const init of [{}, { headers }, { json: {} }]) {
      const res = await h.request(`/contexts/${id}/share`, { method: "POST", token: alice, ...init });
      expect(res.status).toBe(201);
      expect(((await res.json()) as Link).expiresAt).toBeNull();
    }
  });

  it("answers 400 for a body that is not an object", async () => {
    const id = await createContext(alice, "Odd body");
    await expectError(await h.request(`/contexts/${id}/share`, { method: "POST", token: alice, json: "[1]" }), 400, /request body/);
  });

  it("shares an empty context", async () => {
    const id = await createContext(alice, "Nothing yet");
    const link = await share(alice, id);
    expect(await readShared(link.token)).toMatchObject({ name: "Nothing yet", messages: [] });
  });

  it.each([[{ expiresIn: 59 }], [{ expiresIn: 1.5 }], [{ expiresIn: "3600" }], [{ expiresIn: 31_536_001 }]])(
    "answers 400 for %j",
    async (body) => {
      const id = await createContext(alice, "Bad expiry");
      await expectError(await h.request(`/contexts/${id}/share`, { method: "POST", token: alice, json: body }), 400, /expiresIn/);
    },
  );

  it("answers 404 for an unknown context", async () => {
    await expectError(await h.request("/contexts/ctx_nope/share", { method: "POST", token: alice }), 404, /context ctx_nope not found/);
  });

  it("answers 413 for a conversation too long to keep as one snapshot, and stores none", async () => {
    const id = await createContext(alice, "Very long");
    const longMessages = Array.from({ length: 60 }, (_, i) => ({ content: `${i} ${"x".repeat(32_000)}` }));
    await addMessages(h.db, aliceId, id, longMessages, new Date("2026-11-22T10:00:00.000Z"));
    await expectError(await h.request(`/contexts/${id}/share`, { method: "POST", token: alice }), 413, /too long to share/);
    expect((await listShares(alice, "?limit=100")).items.map((s) => s.contextId)).not.toContain(id);
  });
});

describe("GET /shared/{token}", () => {
  it("is public and shows the name, messages and times only, nothing about the owner", async () => {
    const id = await conversation("Public view");
    const link = await share(alice, id);
    const res = await h.request(`/shared/${link.token}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const text = await res.text();
    const body = JSON.parse(text) as Shared;
    expect(Object.keys(body).sort()).toEqual(["expiresAt", "messages", "name", "sharedAt"]);
    for (const m of body.messages) expect(Object.keys(m).every((k) => ["role", "content", "model", "createdAt"].includes(k))).toBe(true);
    expect(text).not.toContain(aliceId);
    expect(text).not.toContain(id);
    expect(text).not.toMatch(/alice|user:/);
  });

  it.each(["shr_doesnotexist", "x".repeat(500), "%22%20OR%201%3D1"])("answers 404 for the unknown token %s", async (token) => {
    await expectError(await h.request(`/shared/${token}`), 404, /does not exist, has been revoked or has expired/);
  });
});

describe("DELETE /contexts/{id}/share", () => {
  it("revokes the link: 204, then the link and a second revoke are 404", async () => {
    const id = await conversation();
    const link = await share(alice, id);
    const res = await h.request(`/contexts/${id}/share`, { method: "DELETE", token: alice });
    expect(res.status).toBe(204);
    await expectError(await h.request(`/shared/${link.token}`), 404);
    await expectError(await h.request(`/contexts/${id}/share`, { method: "DELETE", token: alice }), 404, /has no share link/);
    expect((await listShares(alice, "?limit=100")).items.map((s) => s.token)).not.toContain(link.token);
  });

  it("gives a new token when shared again after a revoke", async () => {
    const id = await conversation();
    const old = await share(alice, id);
    await h.request(`/contexts/${id}/share`, { method: "DELETE", token: alice });
    const fresh = await share(alice, id);
    expect(fresh.token).not.toBe(old.token);
    await expectError(await h.request(`/shared/${old.token}`), 404);
  });

  it("answers 404 for an unknown context", async () => {
    await expectError(await h.request("/contexts/ctx_nope/share", { method: "DELETE", token: alice }), 404, /context ctx_nope not found/);
  });
});

describe("expiry", () => {
  it("serves the link until expiresIn seconds have passed, then answers 404", async () => {
    h.clock.set("2026-11-22T12:00:00.000Z");
    const id = await conversation();
    const link = await share(alice, id, { expiresIn: 3600 });
    expect(link.expiresAt).toBe("2026-11-22T13:00:00.000Z");
    h.clock.set("2026-11-22T12:59:59.999Z");
    expect((await readShared(link.token)).expiresAt).toBe("2026-11-22T13:00:00.000Z");
    h.clock.set("2026-11-22T13:00:00.000Z");
    await expectError(await h.request(`/shared/${link.token}`), 404);
    expect((await listShares(alice, "?limit=100")).items.map((s) => s.token)).not.toContain(link.token);
  });

  it("does not revive an expired link when shared again: the new share has a new token", async () => {
    h.clock.set("2026-11-22T12:00:00.000Z");
    const id = await conversation();
    const expired = await share(alice, id, { expiresIn: 60 });
    h.clock.advance(61_000);
    const renewed = await share(alice, id);
    expect(renewed.token).not.toBe(expired.token);
    expect(renewed.expiresAt).toBeNull();
    await expectError(await h.request(`/shared/${expired.token}`), 404);
    expect((await readShared(renewed.token)).name).toBe("Repotting");
  });

  it("drops the expiry when a live link is shared again without expiresIn", async () => {
    const id = await conversation();
    const first = await share(alice, id, { expiresIn: 600 });
    const second = await share(alice, id);
    expect(second).toMatchObject({ token: first.token, expiresAt: null });
  });
});

describe("GET /shares", () => {
  it("lists the caller's live links newest first, with their contexts, paged by cursor", async () => {
    const frank = await h.signIn("frank");
    const links: Array<Link & { id: string }> = [];
    for (const name of ["one", "two", "three"]) {
      const id = await createContext(frank, name);
      h.clock.advance(1_000);
      links.push({ ...(await share(frank, id)), id });
    }
    const listed = ({ id, ...link }: Link & { id: string }, name: string) => ({ ...link, contextId: id, name });
    const first = await listShares(frank, "?limit=2");
    expect(first.items).toEqual([listed(links[2]!, "three"), listed(links[1]!, "two")]);
    const second = await listShares(frank, `?limit=2&cursor=${first.nextCursor}`);
    expect(second.items.map((s) => s.contextId)).toEqual([links[0]!.id]);
    expect(second.nextCursor).toBeNull();
  });

  it.each(["?limit=0", "?limit=101", "?cursor=garbage"])("answers 400 for %s", async (query) => {
    await expectError(await h.request(`/shares${query}`, { token: alice }), 400);
  });
});

describe("another user's share", () => {
  it("is 404 to share, revoke or list, and the owner's link keeps working", async () => {
    const id = await conversation("Alice's secret");
    const link = await share(alice, id);

    await expectError(await h.request(`/contexts/${id}/share`, { method: "POST", token: bob }), 404, /not found/);
    await expectError(await h.request(`/contexts/${id}/share`, { method: "DELETE", token: bob }), 404, /not found/);
    expect((await listShares(bob, "?limit=100")).items.map((s) => s.token)).not.toContain(link.token);

    const still = await readShared(link.token);
    expect(still.name).toBe("Alice's secret");
    expect(still.sharedAt).toBe(link.createdAt);
  });
});
