import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

interface Group {
  id: string;
  name: string;
  contextCount: number;
  createdAt: string;
  updatedAt: string;
}
interface Context {
  id: string;
  groupId: string | null;
  updatedAt: string;
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

const post = (token: string, body: unknown) => h.request("/groups", { method: "POST", token, json: body });
async function createGroup(token: string, name: string): Promise<Group> {
  const res = await post(token, { name });
  expect(res.status).toBe(201);
  return (await res.json()) as Group;
}
async function createContext(token: string, body: { name: string; groupId?: string }): Promise<Context> {
  const res = await h.request("/contexts", { method: "POST", token, json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as Context;
}
async function listGroups(token: string): Promise<Group[]> {
  const res = await h.request("/groups", { token });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: Group[] }).items;
}

describe("POST /groups", () => {
  it("creates a group: 201 with its fields", async () => {
    h.clock.set("2026-11-22T09:00:00.000Z");
    const res = await post(alice, { name: " Succulents " });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      id: expect.stringMatching(/^grp_[\w-]{22}$/),
      name: "Succulents",
      contextCount: 0,
      createdAt: "2026-11-22T09:00:00.000Z",
      updatedAt: "2026-11-22T09:00:00.000Z",
    });
  });

  it("answers 409 for a second group with the same name for the same user", async () => {
    await createGroup(alice, "Herbs");
    await expectError(await post(alice, { name: "Herbs" }), 409, /already have a group named "Herbs"/);
  });

  it("lets another user use the same name", async () => {
    await createGroup(alice, "Shared name");
    expect((await createGroup(bob, "Shared name")).name).toBe("Shared name");
  });

  it.each([
    [{}, /name/],
    [{ name: "" }, /name: must be 1\.\.100/],
    [{ name: "  " }, /name: must be 1\.\.100/],
    [{ name: "g".repeat(101) }, /name: must be 1\.\.100/],
    [{ name: ["x"] }, /name/],
  ])("answers 400 naming the field for %j", async (body, pattern) => {
    await expectError(await post(alice, body), 400, pattern);
  });

  it("accepts a name of 100 characters", async () => {
    expect((await createGroup(alice, "g".repeat(100))).name).toHaveLength(100);
  });
});

describe("GET /groups", () => {
  it("lists only the caller's groups by name, with how many contexts each holds", async () => {
    const carol = await h.signIn("carol");
    const b = await createGroup(carol, "Beta");
    const a = await createGroup(carol, "Alpha");
    await createContext(carol, { name: "one", groupId: b.id });
    await createContext(carol, { name: "two", groupId: b.id });
    await createContext(carol, { name: "loose" });
    const groups = await listGroups(carol);
    expect(groups.map((g) => [g.id, g.name, g.contextCount])).toEqual([
      [a.id, "Alpha", 0],
      [b.id, "Beta", 2],
    ]);
  });

  it("answers 401 without credentials", async () => {
    await expectError(await h.request("/groups"), 401);
  });
});

describe("PATCH /groups/{id}", () => {
  it("renames a group and moves its updatedAt", async () => {
    const group = await createGroup(alice, "Old name");
    h.clock.advance(5_000);
    const res = await h.request(`/groups/${group.id}`, { method: "PATCH", token: alice, json: { name: "New name" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ...group, name: "New name", updatedAt: h.clock.now().toISOString() });
  });

  it("answers 409 when another of the caller's groups has the name, and keeps the old one", async () => {
    await createGroup(alice, "Taken");
    const group = await createGroup(alice, "Mine");
    await expectError(await h.request(`/groups/${group.id}`, { method: "PATCH", token: alice, json: { name: "Taken" } }), 409, /Taken/);
    expect((await listGroups(alice)).find((g) => g.id === group.id)?.name).toBe("Mine");
  });

  it("accepts the group's own current name", async () => {
    const group = await createGroup(alice, "Unchanged");
    const res = await h.request(`/groups/${group.id}`, { method: "PATCH", token: alice, json: { name: "Unchanged" } });
    expect(res.status).toBe(200);
  });

  it("answers 400 for an empty name", async () => {
    const group = await createGroup(alice, "Valid");
    await expectError(await h.request(`/groups/${group.id}`, { method: "PATCH", token: alice, json: { name: "" } }), 400, /name/);
  });
});

describe("DELETE /groups/{id}", () => {
  it("deletes the group and ungroups its contexts without touching their updatedAt", async () => {
    const dave = await h.signIn("dave");
    const group = await createGroup(dave, "Temporary");
    const inside = await createContext(dave, { name: "inside", groupId: group.id });
    h.clock.advance(60_000);
    const res = await h.request(`/groups/${group.id}`, { method: "DELETE", token: dave });
    expect(res.status).toBe(204);
    expect(await listGroups(dave)).toEqual([]);
    const after = await h.request(`/contexts/${inside.id}`, { token: dave });
    expect(await after.json()).toMatchObject({ id: inside.id, groupId: null, updatedAt: inside.updatedAt });
    await expectError(await h.request(`/groups/${group.id}`, { method: "DELETE", token: dave }), 404);
  });
});

describe("another user's group", () => {
  it("is 404 on every verb, is not listed, and stays untouched", async () => {
    const group = await createGroup(alice, "Alice only");
    const context = await createContext(alice, { name: "kept in place", groupId: group.id });

    expect((await listGroups(bob)).map((g) => g.id)).not.toContain(group.id);
    await expectError(await h.request(`/groups/${group.id}`, { method: "PATCH", token: bob, json: { name: "Bob's now" } }), 404, /not found/);
    await expectError(await h.request(`/groups/${group.id}`, { method: "DELETE", token: bob }), 404, /not found/);

    const mine = (await listGroups(alice)).find((g) => g.id === group.id);
    expect(mine).toMatchObject({ name: "Alice only", contextCount: 1 });
    expect(await (await h.request(`/contexts/${context.id}`, { token: alice })).json()).toMatchObject({ groupId: group.id });
  });
});
