import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addContext, addMessages, countRows, seedUser } from "./support/context-fixtures";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

interface Context {
  id: string;
  name: string;
  nameSource: string;
  groupId: string | null;
  messageCount: number;
  leafId: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  createdAt: string;
  updatedAt: string;
}
interface Message {
  id: string;
  role: string;
  content: string;
  model?: string;
  parentId: string | null;
  siblingIds: string[];
  createdAt: string;
}
type ContextWithMessages = Context & { messages: Message[]; nextBefore: string | null };
interface Page {
  items: Context[];
  nextCursor: string | null;
}

let h: Harness;
let alice: string;
let bob: string;
beforeAll(async () => {
  h = await createHarness();
  alice = await h.signIn("alice");
  bob = await h.signIn("bob");
});
afterAll(() => h.close());

async function createContext(token: string, body: unknown): Promise<Context> {
  const res = await h.request("/contexts", { method: "POST", token, json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as Context;
}

async function createGroup(token: string, name: string): Promise<string> {
  const res = await h.request("/groups", { method: "POST", token, json: { name } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const getJson = async <T>(path: string, token: string): Promise<T> => {
  const res = await h.request(path, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
};

/** A user of their own, with `n` contexts updated one minute apart (the last one newest). */
async function userWithContexts(name: string, n: number) {
  const token = await h.signIn(name);
  const userId = await seedUser(h.db, h.idp.issuer, name);
  const base = Date.parse("2026-11-01T00:00:00.000Z");
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await addContext(h.db, userId, { name: `c${i}`, at: new Date(base + i * 60_000) }));
  return { token, userId, ids };
}

/** Follows nextCursor from the first page to the last, running `between` after each page. */
async function walk(token: string, limit: number, between: (page: number) => Promise<void> = async () => {}) {
  const seen: string[] = [];
  let cursor: string | null = null;
  let page = 0;
  do {
    const query: string = `/contexts?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`;
    const body = await getJson<Page>(query, token);
    expect(body.items.length).toBeLessThanOrEqual(limit);
    seen.push(...body.items.map((c) => c.id));
    cursor = body.nextCursor;
    await between(++page);
  } while (cursor);
  return seen;
}

describe("POST /contexts", () => {
  it("creates an empty context: 201 with exactly the Context fields", async () => {
    h.clock.set("2026-11-22T12:00:00.000Z");
    const res = await h.request("/contexts", { method: "POST", token: alice, json: { name: "  Repotting  " } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Context;
    expect(body).toEqual({
      id: expect.stringMatching(/^ctx_[\w-]{22}$/),
      name: "Repotting",
      nameSource: "person",
      groupId: null,
      messageCount: 0,
      leafId: null,
      instructions: null,
      pinned: false,
      archived: false,
      createdAt: "2026-11-22T12:00:00.000Z",
      updatedAt: "2026-11-22T12:00:00.000Z",
    });
  });

  it("creates a context in one of the caller's groups", async () => {
    const groupId = await createGroup(alice, "Indoor");
    const context = await createContext(alice, { name: "Ferns", groupId });
    expect(context.groupId).toBe(groupId);
  });

  it("answers 404 for a group that is not the caller's, and creates nothing", async () => {
    const bobsGroup = await createGroup(bob, "Bob's folder");
    const before = await getJson<Page>("/contexts?limit=100", alice);
    await expectError(await h.request("/contexts", { method: "POST", token: alice, json: { name: "x", groupId: bobsGroup } }), 404, /group/);
    await expectError(await h.request("/contexts", { method: "POST", token: alice, json: { name: "x", groupId: "grp_nope" } }), 404);
    expect((await getJson<Page>("/contexts?limit=100", alice)).items).toHaveLength(before.items.length);
  });

  it.each([
    [{}, /name/],
    [{ name: "" }, /name: must be 1\.\.200/],
    [{ name: "   " }, /name: must be 1\.\.200/],
    [{ name: "x".repeat(201) }, /name: must be 1\.\.200/],
    [{ name: 7 }, /name/],
    [{ name: "ok", groupId: 5 }, /groupId/],
  ])("answers 400 naming the field for %j", async (body, pattern) => {
    await expectError(await h.request("/contexts", { method: "POST", token: alice, json: body }), 400, pattern);
  });

  it("accepts a name of 200 characters", async () => {
    expect((await createContext(alice, { name: "n".repeat(200) })).name).toHaveLength(200);
  });

  it("answers 401 without credentials", async () => {
    await expectError(await h.request("/contexts", { method: "POST", json: { name: "x" } }), 401);
  });
});

describe("GET /contexts", () => {
  it("lists the caller's contexts most recently updated first, 20 by default", async () => {
    const { token, ids } = await userWithContexts("lister", 23);
    const body = await getJson<Page>("/contexts", token);
    expect(body.items.map((c) => c.id)).toEqual(ids.slice().reverse().slice(0, 20));
    expect(body.nextCursor).toEqual(expect.any(String));
  });

  it("pages with nextCursor through every context exactly once, then null", async () => {
    const { token, ids } = await userWithContexts("pager", 7);
    let pages = 0;
    const seen = await walk(token, 3, async () => void pages++);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids.slice().reverse());
  });

  it("orders contexts updated in the same millisecond by id, without skipping or repeating any", async () => {
    const token = await h.signIn("same-ms");
    const userId = await seedUser(h.db, h.idp.issuer, "same-ms");
    const at = new Date("2026-11-05T00:00:00.000Z");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await addContext(h.db, userId, { name: `t${i}`, at }));
    const seen = await walk(token, 2);
    expect(seen).toEqual(ids.slice().sort().reverse());
  });

  it("stays correct while messages arrive and contexts are created during the walk", async () => {
    const { token, userId, ids } = await userWithContexts("busy", 10);
    // Newest first: ids[9] .. ids[0]. Page size 3.
    const late = new Date("2026-11-20T00:00:00.000Z");
    let created = "";
    const seen = await walk(token, 3, async (page) => {
      if (page !== 1) return;
      // After page 1: an already-listed context and a not-yet-listed one get new messages,
      // one is deleted, and a new context is created. All of them jump above the cursor.
      await addMessages(h.db, userId, ids[9]!, [{ content: "again" }], late);
      await addMessages(h.db, userId, ids[2]!, [{ content: "bumped" }], new Date(late.getTime() + 1000));
      created = await addContext(h.db, userId, { name: "new", at: new Date(late.getTime() + 2000) });
      expect((await h.request(`/contexts/${ids[4]}`, { method: "DELETE", token })).status).toBe(204);
    });
    // No duplicates; every context left alone is listed once, in order; the bumped and the
    // new context are above the walk's position, so they are not in this walk...
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([ids[9], ids[8], ids[7], ids[6], ids[5], ids[3], ids[1], ids[0]]);
    // ...and a fresh first page shows them on top.
    const first = await getJson<Page>("/contexts?limit=3", token);
    expect(first.items.map((c) => c.id)).toEqual([created, ids[2], ids[9]]);
  });

  it("filters by group, and lists the contexts in no group with groupId=none", async () => {
    const token = await h.signIn("filterer");
    const groupId = await createGroup(token, "Cacti");
    const inGroup = await createContext(token, { name: "in", groupId });
    const loose = await createContext(token, { name: "loose" });
    expect((await getJson<Page>(`/contexts?groupId=${groupId}`, token)).items.map((c) => c.id)).toEqual([inGroup.id]);
    expect((await getJson<Page>("/contexts?groupId=none", token)).items.map((c) => c.id)).toEqual([loose.id]);
  });

  it("answers 404 for a groupId that is not the caller's", async () => {
    const bobsGroup = await createGroup(bob, "Bob's filter");
    await expectError(await h.request(`/contexts?groupId=${bobsGroup}`, { token: alice }), 404, /group/);
  });

  it.each(["0", "101", "abc", "1.5"])("answers 400 for limit=%s", async (limit) => {
    await expectError(await h.request(`/contexts?limit=${limit}`, { token: alice }), 400, /limit/);
  });

  it.each(["zzz", "bm90LWEtY3Vyc29y", "%00", "MTIzNDU2Nzg5MDEyMzQ1Njc4OS5jdHhfYQ"])("answers 400 for the forged cursor %s", async (cursor) => {
    await expectError(await h.request(`/contexts?cursor=${cursor}`, { token: alice }), 400, /cursor/);
  });
});

describe("GET /contexts/{id}", () => {
  it("returns the context with its messages oldest first, each with its parent and versions, model only where there is one", async () => {
    const userId = await seedUser(h.db, h.idp.issuer, "alice");
    const context = await createContext(alice, { name: "Watering" });
    const t0 = new Date("2026-11-22T13:00:00.000Z");
    const [m1, m2] = await addMessages(
      h.db,
      userId,
      context.id,
      [{ content: "How often?" }, { content: "Weekly.", role: "assistant", model: "svc-70b" }],
      t0,
    );
    const body = await getJson<ContextWithMessages>(`/contexts/${context.id}`, alice);
    expect(body).toEqual({
      ...context,
      messageCount: 2,
      leafId: m2,
      updatedAt: "2026-11-22T13:00:00.001Z",
      messages: [
        { id: m1, role: "user", content: "How often?", parentId: null, siblingIds: [m1], createdAt: "2026-11-22T13:00:00.000Z" },
        { id: m2, role: "assistant", content: "Weekly.", model: "svc-70b", parentId: m1, siblingIds: [m2], createdAt: "2026-11-22T13:00:00.001Z", status: "done", rating: null },
      ],
      nextBefore: null,
      running: null,
    });
  });

  it("pages back through a long conversation with limit and before", async () => {
    const userId = await seedUser(h.db, h.idp.issuer, "alice");
    const context = await createContext(alice, { name: "Long" });
    const ids = await addMessages(h.db, userId, context.id, Array.from({ length: 7 }, (_, i) => ({ content: `m${i}` })), new Date("2026-11-22T14:00:00.000Z"));
    const first = await getJson<ContextWithMessages>(`/contexts/${context.id}?limit=3`, alice);
    expect(first.messages.map((m) => m.id)).toEqual(ids.slice(4));
    expect(first.messageCount).toBe(7);
    const second = await getJson<ContextWithMessages>(`/contexts/${context.id}?limit=3&before=${first.nextBefore}`, alice);
    expect(second.messages.map((m) => m.id)).toEqual(ids.slice(1, 4));
    const third = await getJson<ContextWithMessages>(`/contexts/${context.id}?limit=3&before=${second.nextBefore}`, alice);
    expect(third.messages.map((m) => m.id)).toEqual(ids.slice(0, 1));
    expect(third.nextBefore).toBeNull();
  });

  it("answers 400 when before is not a message of this context", async () => {
    const userId = await seedUser(h.db, h.idp.issuer, "alice");
    const a = await createContext(alice, { name: "A" });
    const b = await createContext(alice, { name: "B" });
    const [other] = await addMessages(h.db, userId, b.id, [{ content: "elsewhere" }], h.clock.now());
    await expectError(await h.request(`/contexts/${a.id}?before=${other}`, { token: alice }), 400, /before/);
    await expectError(await h.request(`/contexts/${a.id}?before=msg_missing`, { token: alice }), 400, /before/);
  });

  it.each(["0", "501", "x"])("answers 400 for limit=%s", async (limit) => {
    const context = await createContext(alice, { name: "L" });
    await expectError(await h.request(`/contexts/${context.id}?limit=${limit}`, { token: alice }), 400, /limit/);
  });

  it("answers 404 for an unknown context", async () => {
    await expectError(await h.request("/contexts/ctx_nope", { token: alice }), 404, /context ctx_nope not found/);
  });
});

describe("PATCH /contexts/{id}", () => {
  it("renames a context and moves its updatedAt, so it leads the list", async () => {
    const { token, ids } = await userWithContexts("renamer", 3);
    h.clock.set("2026-11-23T08:00:00.000Z");
    const res = await h.request(`/contexts/${ids[0]}`, { method: "PATCH", token, json: { name: "Renamed" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Context;
    expect(body).toMatchObject({ id: ids[0], name: "Renamed", updatedAt: "2026-11-23T08:00:00.000Z" });
    expect((await getJson<Page>("/contexts", token)).items[0]!.id).toBe(ids[0]);
  });

  it("keeps updatedAt when the name does not change", async () => {
    const context = await createContext(alice, { name: "Same" });
    h.clock.advance(60_000);
    const res = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { name: "Same" } });
    expect(((await res.json()) as Context).updatedAt).toBe(context.updatedAt);
  });

  it("moves a context into a group and out again with null, leaving updatedAt alone", async () => {
    const context = await createContext(alice, { name: "Mover" });
    const groupId = await createGroup(alice, "Destination");
    h.clock.advance(60_000);
    const moved = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { groupId } });
    expect(await moved.json()).toEqual({ ...context, groupId });
    const out = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { groupId: null } });
    expect(await out.json()).toEqual({ ...context, groupId: null });
  });

  it("answers 404 for a group that is not the caller's and leaves the context as it was", async () => {
    const context = await createContext(alice, { name: "Stay" });
    const bobsGroup = await createGroup(bob, "Not yours");
    const res = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { name: "Moved?", groupId: bobsGroup } });
    await expectError(res, 404, new RegExp(`group ${bobsGroup} not found`));
    expect(await getJson<ContextWithMessages>(`/contexts/${context.id}`, alice)).toMatchObject({ name: "Stay", groupId: null });
  });

  it.each([
    [{}, /send at least one of name, groupId, instructions, pinned, archived, leafId/],
    [{ name: "" }, /name/],
    [{ name: "x".repeat(201) }, /name/],
    [{ groupId: 3 }, /groupId/],
  ])("answers 400 for %j", async (body, pattern) => {
    const context = await createContext(alice, { name: "Patchable" });
    await expectError(await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: body }), 400, pattern);
  });

  it("answers 404 for an unknown context", async () => {
    await expectError(await h.request("/contexts/ctx_nope", { method: "PATCH", token: alice, json: { name: "x" } }), 404, /context/);
  });
});

describe("instructions", () => {
  it("are set when the context is created, changed and cleared with PATCH, without moving updatedAt", async () => {
    const context = await createContext(alice, { name: "Metric", instructions: "Answer in metric units." });
    expect(context.instructions).toBe("Answer in metric units.");
    h.clock.advance(60_000);
    const patch = async (instructions: unknown) => {
      const res = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { instructions } });
      expect(res.status).toBe(200);
      return (await res.json()) as Context;
    };
    expect(await patch("Be brief.\nUse lists.")).toEqual({ ...context, instructions: "Be brief.\nUse lists." });
    expect((await patch("   ")).instructions).toBeNull();
    expect((await patch("Again")).instructions).toBe("Again");
    expect((await patch(null)).instructions).toBeNull();
    expect((await getJson<Context>(`/contexts/${context.id}`, alice)).updatedAt).toBe(context.updatedAt);
  });

  it(`take up to ${8000} characters, counting an emoji once, and refuse more naming the field`, async () => {
    const context = await createContext(alice, { name: "Long instructions" });
    const ok = await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { instructions: "🌱".repeat(8000) } });
    expect(ok.status).toBe(200);
    await expectError(
      await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { instructions: "x".repeat(8001) } }),
      400,
      /instructions: must be at most 8000 characters/,
    );
    await expectError(await h.request("/contexts", { method: "POST", token: alice, json: { name: "n", instructions: 5 } }), 400, /instructions/);
  });
});

describe("pinned and archived contexts", () => {
  const patch = (token: string, id: string, body: unknown) => h.request(`/contexts/${id}`, { method: "PATCH", token, json: body });

  it("lists pinned and unpinned contexts apart, each most recently updated first, without moving them", async () => {
    const { token, ids } = await userWithContexts("pinner", 4);
    const res = await patch(token, ids[1]!, { pinned: true });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: ids[1], pinned: true, updatedAt: "2026-11-01T00:01:00.000Z" });
    await patch(token, ids[2]!, { pinned: true });
    expect((await getJson<Page>("/contexts?pinned=true", token)).items.map((c) => c.id)).toEqual([ids[2], ids[1]]);
    expect((await getJson<Page>("/contexts?pinned=false", token)).items.map((c) => c.id)).toEqual([ids[3], ids[0]]);
    expect((await getJson<Page>("/contexts", token)).items.map((c) => c.id)).toEqual(ids.slice().reverse());
    await patch(token, ids[2]!, { pinned: false });
    expect((await getJson<Page>("/contexts?pinned=true", token)).items.map((c) => c.id)).toEqual([ids[1]]);
  });

  it("leaves archived contexts out of the list and their group's count, lists them with archived=true, and restores them", async () => {
    const { token, ids } = await userWithContexts("archiver", 3);
    const groupId = await createGroup(token, "Old stuff");
    await patch(token, ids[0]!, { groupId });
    await patch(token, ids[1]!, { groupId });
    expect((await (await patch(token, ids[0]!, { archived: true })).json()) as Context).toMatchObject({ archived: true, groupId });
    expect((await getJson<Page>("/contexts", token)).items.map((c) => c.id)).toEqual([ids[2], ids[1]]);
    expect((await getJson<Page>(`/contexts?groupId=${groupId}`, token)).items.map((c) => c.id)).toEqual([ids[1]]);
    expect((await getJson<{ items: Array<{ contextCount: number }> }>("/groups", token)).items[0]!.contextCount).toBe(1);
    expect((await getJson<Page>("/contexts?archived=true", token)).items.map((c) => c.id)).toEqual([ids[0]]);
    // Still readable by its id.
    expect((await getJson<Context>(`/contexts/${ids[0]}`, token)).archived).toBe(true);

    await patch(token, ids[0]!, { archived: false });
    expect((await getJson<Page>("/contexts", token)).items.map((c) => c.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect((await getJson<Page>("/contexts?archived=true", token)).items).toEqual([]);
  });

  it.each([
    ["/contexts?archived=yes", /archived: must be true or false/],
    ["/contexts?pinned=1", /pinned: must be true or false/],
    ["/contexts/search?q=x&includeArchived=maybe", /includeArchived: must be true or false/],
  ])("answers 400 for %s", async (path, pattern) => {
    await expectError(await h.request(path, { token: alice }), 400, pattern);
  });

  it.each([[{ pinned: "yes" }], [{ archived: 1 }]])("answers 400 for PATCH %j", async (body) => {
    const context = await createContext(alice, { name: "Flags" });
    await expectError(await patch(alice, context.id, body), 400, new RegExp(Object.keys(body)[0]!));
  });
});

describe("DELETE /contexts/{id}", () => {
  it("deletes the context with its messages, search entries and share link", async () => {
    const userId = await seedUser(h.db, h.idp.issuer, "alice");
    const context = await createContext(alice, { name: "Doomed xylophone" });
    await addMessages(h.db, userId, context.id, [{ content: "zanzibar orchids" }, { content: "more zanzibar" }], h.clock.now());
    const share = await h.request(`/contexts/${context.id}/share`, { method: "POST", token: alice });
    const { token } = (await share.json()) as { token: string };
    expect(await countRows(h.db, "search_docs", context.id)).toBe(3);

    const res = await h.request(`/contexts/${context.id}`, { method: "DELETE", token: alice });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");

    await expectError(await h.request(`/contexts/${context.id}`, { token: alice }), 404);
    expect(await countRows(h.db, "messages", context.id)).toBe(0);
    expect(await countRows(h.db, "search_docs", context.id)).toBe(0);
    expect(await countRows(h.db, "shares", context.id)).toBe(0);
    expect((await h.request(`/shared/${token}`)).status).toBe(404);
    for (const q of ["zanzibar", "xylophone"]) {
      expect((await getJson<{ items: unknown[] }>(`/contexts/search?q=${q}`, alice)).items).toEqual([]);
    }
    await expectError(await h.request(`/contexts/${context.id}`, { method: "DELETE", token: alice }), 404);
  });
});

describe("another user's context", () => {
  it("is 404 on every verb and stays untouched", async () => {
    const aliceId = await seedUser(h.db, h.idp.issuer, "alice");
    const context = await createContext(alice, { name: "Private" });
    await addMessages(h.db, aliceId, context.id, [{ content: "secret" }], h.clock.now());
    const before = await getJson<ContextWithMessages>(`/contexts/${context.id}`, alice);

    await expectError(await h.request(`/contexts/${context.id}`, { token: bob }), 404, /not found/);
    await expectError(await h.request(`/contexts/${context.id}`, { method: "PATCH", token: bob, json: { name: "Mine" } }), 404);
    await expectError(await h.request(`/contexts/${context.id}`, { method: "PATCH", token: bob, json: { groupId: null } }), 404);
    await expectError(await h.request(`/contexts/${context.id}`, { method: "DELETE", token: bob }), 404);
    expect((await getJson<Page>("/contexts?limit=100", bob)).items.map((c) => c.id)).not.toContain(context.id);

    expect(await getJson<ContextWithMessages>(`/contexts/${context.id}`, alice)).toEqual(before);
  });
});

describe("the OpenAPI document", () => {
  it("describes the context, group, search and share endpoints", async () => {
    const doc = (await (await h.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/contexts",
        "/contexts/search",
        "/contexts/{id}",
        "/contexts/{id}/share",
        "/groups",
        "/groups/{id}",
        "/shares",
        "/shared/{token}",
      ]),
    );
    expect(Object.keys(doc.paths["/contexts/{id}"]!).sort()).toEqual(["delete", "get", "patch"]);
    expect(doc.paths["/shared/{token}"]!.get).not.toHaveProperty("security");
  });
});
