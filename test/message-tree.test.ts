import { mkdtempSync, readFileSync, rmSync, cpSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { migrate } from "drizzle-orm/libsql/migrator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dbFromLibsql } from "../src/platform/db";
import { addMessages, seedUser } from "./support/context-fixtures";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

interface Message {
  id: string;
  role: string;
  content: string;
  parentId: string | null;
  siblingIds: string[];
}
interface ContextWithMessages {
  id: string;
  leafId: string | null;
  updatedAt: string;
  messageCount: number;
  messages: Message[];
  nextBefore: string | null;
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

async function read(contextId: string, query = "", token = alice): Promise<ContextWithMessages> {
  const res = await h.request(`/contexts/${contextId}${query}`, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as ContextWithMessages;
}

const contents = (c: ContextWithMessages) => c.messages.map((m) => m.content);
const at = (minute: number) => new Date(Date.UTC(2026, 10, 22, 12, minute));

/**
 * A conversation with branches, as regenerating and editing make it:
 *
 *   q1 ─ a1 ─ q2 ─ a2
 *      │    └ q2' ─ a2'        (q2 edited and sent again)
 *      └ a1'                   (a1 regenerated; the active branch ends here)
 */
async function branchedConversation() {
  const id = await createContext(alice, "Branches");
  const [q1, a1, q2, a2] = await addMessages(h.db, aliceId, id, [{ content: "q1" }, { content: "a1" }, { content: "q2" }, { content: "a2" }], at(0));
  const [q2b, a2b] = await addMessages(h.db, aliceId, id, [{ content: "q2'" }, { content: "a2'" }], at(1), { parentId: a1! });
  const [a1b] = await addMessages(h.db, aliceId, id, [{ content: "a1'", role: "assistant" }], at(2), { parentId: q1! });
  return { id, q1: q1!, a1: a1!, q2: q2!, a2: a2!, q2b: q2b!, a2b: a2b!, a1b: a1b! };
}

describe("GET /contexts/{id} on a tree of messages", () => {
  it("returns the active branch, each message with its parent and its versions in order", async () => {
    const t = await branchedConversation();
    const body = await read(t.id);
    expect(body.leafId).toBe(t.a1b);
    expect(body.messageCount).toBe(7);
    expect(body.messages).toEqual([
      expect.objectContaining({ id: t.q1, parentId: null, siblingIds: [t.q1] }),
      expect.objectContaining({ id: t.a1b, content: "a1'", parentId: t.q1, siblingIds: [t.a1, t.a1b] }),
    ]);
  });

  it("with leaf, returns the branch through that message, continued down its newest replies", async () => {
    const t = await branchedConversation();
    expect(contents(await read(t.id, `?leaf=${t.a2}`))).toEqual(["q1", "a1", "q2", "a2"]);
    // a1 has two follow-ups; the newer one (the edit) continues its branch.
    const throughA1 = await read(t.id, `?leaf=${t.a1}`);
    expect(contents(throughA1)).toEqual(["q1", "a1", "q2'", "a2'"]);
    expect(throughA1.messages[2]).toMatchObject({ parentId: t.a1, siblingIds: [t.q2, t.q2b] });
    // Reading a branch does not switch to it.
    expect((await read(t.id)).leafId).toBe(t.a1b);
  });

  it("pages back along one branch with before, never into another", async () => {
    const t = await branchedConversation();
    const page = await read(t.id, `?leaf=${t.a2}&limit=2`);
    expect(contents(page)).toEqual(["q2", "a2"]);
    expect(page.nextBefore).toBe(t.q2);
    const earlier = await read(t.id, `?before=${page.nextBefore}&limit=2`);
    expect(contents(earlier)).toEqual(["q1", "a1"]);
    expect(earlier.nextBefore).toBeNull();
  });

  it("answers 404 message_not_found for a leaf that is not a message of this context", async () => {
    const t = await branchedConversation();
    const other = await branchedConversation();
    await expectError(await h.request(`/contexts/${t.id}?leaf=msg_nope`, { token: alice }), 404, /leaf: message msg_nope is not a message of context/, "message_not_found");
    await expectError(await h.request(`/contexts/${t.id}?leaf=${other.a2}`, { token: alice }), 404, undefined, "message_not_found");
    // Another user's context stays a plain 404 for the context, whatever the leaf.
    await expectError(await h.request(`/contexts/${t.id}?leaf=${t.a2}`, { token: bob }), 404, undefined, "context_not_found");
  });
});

describe("PATCH /contexts/{id} with leafId", () => {
  it("switches the active branch, to the end of the branch through that message, and keeps it", async () => {
    const t = await branchedConversation();
    const before = await read(t.id);
    const res = await h.request(`/contexts/${t.id}`, { method: "PATCH", token: alice, json: { leafId: t.q2 } });
    expect(res.status).toBe(200);
    const patched = (await res.json()) as ContextWithMessages;
    expect(patched.leafId).toBe(t.a2);
    // Switching is not an update of the conversation: its place in the list stays.
    expect(patched.updatedAt).toBe(before.updatedAt);
    expect(contents(await read(t.id))).toEqual(["q1", "a1", "q2", "a2"]);
  });

  it("answers 404 for a message of another context or user, and changes nothing", async () => {
    const t = await branchedConversation();
    const other = await branchedConversation();
    await expectError(await h.request(`/contexts/${t.id}`, { method: "PATCH", token: alice, json: { leafId: other.a2 } }), 404, /leafId/, "message_not_found");
    await expectError(await h.request(`/contexts/${t.id}`, { method: "PATCH", token: bob, json: { leafId: t.a2 } }), 404, undefined, "context_not_found");
    expect((await read(t.id)).leafId).toBe(t.a1b);
  });
});

describe("share snapshots", () => {
  it("hold the active branch only", async () => {
    const t = await branchedConversation();
    await h.request(`/contexts/${t.id}`, { method: "PATCH", token: alice, json: { leafId: t.a2b } });
    const link = (await (await h.request(`/contexts/${t.id}/share`, { method: "POST", token: alice })).json()) as { token: string };
    const shared = (await (await h.request(`/shared/${link.token}`)).json()) as { messages: Array<{ content: string }> };
    expect(shared.messages.map((m) => m.content)).toEqual(["q1", "a1", "q2'", "a2'"]);
    expect(Object.keys(shared.messages[0]!).sort()).toEqual(["content", "createdAt", "role"]);
  });
});

describe("the migration to the tree", () => {
  it("gives each earlier message the one before it as parent, and each context its newest as the active branch's end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tree-migration-"));
    const all = resolve(import.meta.dirname, "../migrations");
    try {
      // The migrations as they stood before the tree.
      const old = join(dir, "old");
      cpSync(all, old, { recursive: true });
      const journal = JSON.parse(readFileSync(join(old, "meta/_journal.json"), "utf8")) as { entries: Array<{ tag: string }> };
      const cut = journal.entries.findIndex((e) => e.tag.endsWith("_message_tree"));
      expect(cut).toBeGreaterThan(0);
      journal.entries = journal.entries.slice(0, cut);
      writeFileSync(join(old, "meta/_journal.json"), JSON.stringify(journal));

      const client = createClient({ url: `file:${join(dir, "db")}` });
      const db = dbFromLibsql(client);
      await migrate(db, { migrationsFolder: old });
      await client.execute("insert into users (id, issuer, subject, name, created_at) values ('u1', 'i', 's', 'n', 0)");
      for (const [id, created] of [["c1", 10], ["c2", 20], ["c3", 30]] as const) {
        await client.execute({ sql: "insert into contexts (id, user_id, name, message_count, created_at, updated_at) values (?, 'u1', ?, 0, ?, ?)", args: [id, id, created, created] });
      }
      // c1: three messages, two of them in the same millisecond (ordered by id); c2: one; c3: none.
      for (const [id, context, created] of [["m_b", "c1", 100], ["m_a", "c1", 100], ["m_c", "c1", 101], ["m_d", "c2", 50]] as const) {
        await client.execute({ sql: "insert into messages (id, context_id, user_id, role, content, created_at) values (?, ?, 'u1', 'user', ?, ?)", args: [id, context, id, created] });
      }

      await migrate(db, { migrationsFolder: all });
      const parents = await client.execute("select id, parent_id from messages order by id");
      expect(parents.rows.map((r) => [r.id, r.parent_id])).toEqual([
        ["m_a", null],
        ["m_b", "m_a"],
        ["m_c", "m_b"],
        ["m_d", null],
      ]);
      const leaves = await client.execute("select id, leaf_id, name_source, pinned, archived from contexts order by id");
      expect(leaves.rows.map((r) => [r.id, r.leaf_id, r.name_source, r.pinned, r.archived])).toEqual([
        ["c1", "m_c", "person", 0, 0],
        ["c2", "m_d", "person", 0, 0],
        ["c3", null, "person", 0, 0],
      ]);
      client.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
