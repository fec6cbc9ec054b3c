import { existsSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { fileForm, png } from "./support/files";
import { attachmentsFolder } from "../src/platform/node/node-deps";

// Erasure on request: DELETE /me (with the account's id to confirm) and an admin's DELETE
// /admin/users/{id}: everything the person owns goes, usage stays pointing at nobody, and
// the same identity later gets a new, empty account.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "off", ADMINS: "boss@example.com" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const count = async (table: string, column: string, id: string) =>
  (await h.db.all<{ n: number }>(sql`select count(*) as n from ${sql.identifier(table)} where ${sql.identifier(column)} = ${id}`))[0]!.n;

/** A person with a context, a share, a group, a preset, a key and a session. */
async function person(name: string) {
  const token = await h.signIn(name);
  const { id } = await json<{ id: string }>(h.request("/me", { token }));
  const { contextId } = await json<{ contextId: string }>(h.request("/chat/send", { method: "POST", token, json: { message: "my secret garden" } }));
  expect((await h.request(`/contexts/${contextId}/share`, { method: "POST", token, json: {} })).status).toBe(201);
  expect((await h.request("/groups", { method: "POST", token, json: { name: "mine" } })).status).toBe(201);
  await h.request("/me", { method: "PATCH", token, json: { presets: [{ name: "p", instructions: "be kind" }] } });
  const { key } = await json<{ key: string }>(h.request("/keys", { method: "POST", token, json: {} }));
  const session = await json<{ accessToken: string }>(h.request("/auth/session", { method: "POST", json: { accessToken: token } }));
  return { token, id, key, contextId, session: session.accessToken };
}

async function expectErased(p: Awaited<ReturnType<typeof person>>) {
  for (const [table, column] of [["contexts", "user_id"], ["messages", "user_id"], ["shares", "user_id"], ["groups", "user_id"], ["api_keys", "user_id"], ["sessions", "user_id"], ["identities", "user_id"], ["users", "id"], ["search_docs", "user_id"]]) {
    expect(await count(table!, column!, p.id), table).toBe(0);
  }
  // Usage stays, pointing at nobody.
  const usage = await h.db.all<{ user_id: string | null; context_id: string | null; message_id: string | null }>(sql`select user_id, context_id, message_id from usage_events where context_id is null and user_id is null`);
  expect(usage.length).toBeGreaterThan(0);
  expect(await count("usage_events", "user_id", p.id)).toBe(0);
  await expectError(await h.request("/credits", { apiKey: p.key }), 401);
  await expectError(await h.request("/credits", { token: p.session }), 401, /session has ended/);
  // The same identity comes back to a new, empty account.
  expect(await json(h.request("/contexts", { token: p.token }))).toMatchObject({ items: [] });
  expect((await json<{ presets: unknown[] }>(h.request("/me", { token: p.token }))).presets).toEqual([]);
}

describe("erasure", () => {
  it("DELETE /me needs the account's id to confirm, then erases everything but anonymous usage", async () => {
    const p = await person("eraser");
    await expectError(await h.request("/me", { method: "DELETE", token: p.token, json: { confirm: "usr_someoneelse" } }), 422, /send \{ "confirm": "usr_/, "confirmation_mismatch");
    await expectError(await h.request("/me", { method: "DELETE", apiKey: p.key, json: { confirm: p.id } }), 403, undefined, "api_key_not_allowed");
    expect((await h.request("/me", { method: "DELETE", token: p.token, json: { confirm: p.id } })).status).toBe(204);
    await expectErased(p);
  });

  it("DELETE /admin/users/{id} erases the same way, audited", async () => {
    const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
    const p = await person("erased-by-admin");
    expect((await h.request(`/admin/users/${p.id}`, { method: "DELETE", token: boss })).status).toBe(204);
    await expectErased(p);
    const audit = await json<{ items: Array<{ action: string; targetId: string }> }>(h.request("/admin/audit?limit=1", { token: boss }));
    expect(audit.items[0]).toMatchObject({ action: "user.erase", targetId: p.id });
    await expectError(await h.request("/admin/users/usr_gone", { method: "DELETE", token: boss }), 404, undefined, "user_not_found");
  });

  it("removes the person's attachments and their files, but a file another person's upload shares stays", async () => {
    const p = await person("uploads-then-leaves");
    const other = await h.signIn("keeps-the-same-picture");
    const upload = async (bytes: Uint8Array<ArrayBuffer>, name: string, token: string) => {
      const res = await h.request("/attachments", { method: "POST", body: fileForm(bytes, name), token });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const own = new TextEncoder().encode("notes only the leaver ever uploaded");
    const ownId = await upload(own, "notes.txt", p.token);
    const sharedId = await upload(png(), "leaf.png", p.token);
    const othersId = await upload(png(), "same-leaf.png", other);
    expect((await h.request("/chat/send", { method: "POST", token: p.token, json: { message: "with files", attachments: [ownId] } })).status).toBe(200);
    const fileOf = async (bytes: Uint8Array<ArrayBuffer>) => {
      const hash = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");
      return join(attachmentsFolder(`file:${h.dbFile}`), hash.slice(0, 2), hash);
    };
    expect(existsSync(await fileOf(own))).toBe(true);

    expect((await h.request("/me", { method: "DELETE", token: p.token, json: { confirm: p.id } })).status).toBe(204);
    expect(await count("attachments", "user_id", p.id)).toBe(0);
    expect((await h.db.all<{ n: number }>(sql`select count(*) as n from message_attachments where attachment_id in (${ownId}, ${sharedId})`))[0]!.n).toBe(0);
    expect(existsSync(await fileOf(own))).toBe(false);
    expect(existsSync(await fileOf(png()))).toBe(true);
    const kept = await h.request(`/attachments/${othersId}`, { token: other });
    expect(kept.status).toBe(200);
    expect(new Uint8Array(await kept.arrayBuffer())).toEqual(png());
  });

  it("DELETE /admin/users/{id} removes the person's files too", async () => {
    const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
    const p = await person("erased-with-a-file");
    const bytes = new TextEncoder().encode("a file only the admin's erasure should remove");
    expect((await h.request("/attachments", { method: "POST", body: fileForm(bytes, "mine.txt"), token: p.token })).status).toBe(201);
    const hash = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");
    const file = join(attachmentsFolder(`file:${h.dbFile}`), hash.slice(0, 2), hash);
    expect(existsSync(file)).toBe(true);
    expect((await h.request(`/admin/users/${p.id}`, { method: "DELETE", token: boss })).status).toBe(204);
    expect(existsSync(file)).toBe(false);
    expect(await count("attachments", "user_id", p.id)).toBe(0);
  });
});
