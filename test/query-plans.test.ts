import { createClient, type Client } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";

// Every statement a chat message runs, those of a person's everyday reads and those of an
// account's erasure (with the foreign keys' checks of the rows it deletes), as SQLite plans
// them: none may read a table whole. A full scan costs nothing on a test's few rows
// and grows with every message a service keeps: the check of the reply a message follows
// once compared a column with itself and read the whole messages table for each such
// message.

/**
 * The table whose rows live only while an exchange is in flight (a credit hold, until its
 * exchange settles): its size is the number of requests at once, not the service's history,
 * and its one scan (a limited API key's holds, summed by the key's guard) is left to it
 * rather than given an index every message would write.
 */
const IN_FLIGHT = new Set(["credit_holds"]);

let up: FakeUpstream;
let h: Harness;
/** A connection of its own to the harness's database file, for the plans. */
let planner: Client;
const sent = new Set<string>();
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, TITLES: "all" }, onStatement: (sql) => sent.add(sql) });
  planner = createClient({ url: `file:${h.dbFile}` });
});
afterAll(async () => {
  planner?.close();
  await h.close();
  await up.close();
});

/** SQLite's plan of `sql`: one line per step ("SEARCH messages USING INDEX …", "SCAN q", …). */
async function planOf(sql: string): Promise<string[]> {
  const placeholders = (sql.match(/\?/g) ?? []).length;
  const rs = await planner.execute({ sql: `explain query plan ${sql}`, args: Array(placeholders).fill(null) });
  return rs.rows.map((r) => String(r.detail));
}

/**
 * The full scans of tables (but IN_FLIGHT's) in the plans of `statements`, one line each.
 * `foreignKeyChecks`: count the scans of the foreign keys' checks too (see below), for
 * statements that delete parent rows.
 */
async function scansOf(statements: Iterable<string>, { foreignKeyChecks = false } = {}): Promise<string[]> {
  const scans: string[] = [];
  // Rows made in the statement itself (json_each, a CTE's rows, a constant row) are not tables.
  const tables = new Set((await planner.execute("select name from sqlite_schema where type = 'table'")).rows.map((r) => String(r.name)));
  for (const sql of statements) {
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(sql)) continue;
    const plan = await planOf(sql);
    // A subquery's rows, made as the statement runs, are scanned under the subquery's name.
    const made = new Set(plan.flatMap((step) => /^(?:CO-ROUTINE|MATERIALIZE) (\S+)$/.exec(step)?.[1] ?? []));
    for (const step of plan) {
      const scanned = /^SCAN (\S+)(.*)$/.exec(step);
      if (!scanned || /VIRTUAL TABLE|CONSTANT ROW/.test(step) || made.has(scanned[1]!)) continue;
      const [, name] = scanned;
      // An alias (`messages q`) is looked up by what the statement names it after.
      const table = tables.has(name!) ? name : new RegExp(`(?:from|join)\\s+"?(\\w+)"?\\s+(?:as\\s+)?"?${name}"?(?:\\s|\\)|,|$)`, "i").exec(sql)?.[1];
      // A table the statement never names is scanned by a foreign key's check, planned for a
      // write to a parent row (users, identities) and run only when that row's key changes
      // or goes: every request upserts its user with the key unchanged.
      const named = foreignKeyChecks || (table === name ? new RegExp(`\\b${table}\\b`).test(sql) : true);
      if (table && tables.has(table) && named && !IN_FLIGHT.has(table)) scans.push(`${step} (${table}) in: ${sql.replace(/\s+/g, " ").slice(0, 160)}`);
    }
  }
  return scans;
}

/**
 * The steps that read every message of a person (by the person's index alone) in the plans
 * of `statements`: not a scan, but as bad at scale for a statement about one conversation,
 * which SQLite may plan that way when its other index does not name the person too.
 */
async function personWideReadsOf(statements: Iterable<string>): Promise<string[]> {
  const found: string[] = [];
  for (const sql of statements) {
    // A statement that does not name the messages has their index in its plan only for a
    // foreign key's check, run when a person's row goes (the erasure, tested below).
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(sql) || !/\bmessages\b/.test(sql)) continue;
    for (const step of await planOf(sql)) {
      if (/USING (COVERING )?INDEX messages_user_idx \(user_id=\?\)$/.test(step)) found.push(`${step} in: ${sql.replace(/\s+/g, " ").slice(0, 160)}`);
    }
  }
  return found;
}

/** A request as the person whose token this is, which must succeed; its JSON body, if any. */
function caller(token: string) {
  return async (method: string, path: string, json?: unknown) => {
    const res = await h.request(path, { method, token, ...(json === undefined ? {} : { json }) });
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBeLessThan(300);
    return res.headers.get("content-type")?.includes("json") ? ((await res.json()) as Record<string, unknown>) : {};
  };
}

describe("the chat path's statements", () => {
  it("search by an index or a key, never scan a table, for new, continued, edited and regenerated messages", async () => {
    const token = await h.signIn("planner");
    const key = ((await (await h.request("/keys", { method: "POST", token, json: { name: "plans" } })).json()) as { key: string }).key;
    const post = async (path: string, body: Record<string, unknown>, auth: { token?: string; apiKey?: string } = { token }) => {
      const res = await h.request(path, { method: "POST", ...auth, json: body });
      expect(res.status, await res.clone().text()).toBe(200);
      return (await res.json()) as { contextId: string; messageId: string; parentId: string };
    };
    sent.clear();
    const first = await post("/chat/send", { message: "q1" });
    const second = await post("/chat/send", { message: "q2", contextId: first.contextId });
    await post("/chat/send", { message: "q2, edited", contextId: first.contextId, parentId: first.messageId });
    await post(`/contexts/${first.contextId}/messages/${second.messageId}/regenerate`, {});
    await post("/chat/send", { message: "by key", contextId: first.contextId }, { apiKey: key });
    await h.settled();
    expect(sent.size).toBeGreaterThan(20);

    expect(await scansOf(sent)).toEqual([]);
    expect(await personWideReadsOf(sent)).toEqual([]);
  });
});

describe("what a signed-in person reads and writes besides chat", () => {
  it("searches by an index or a key: conversations, a conversation, search, credits, usage, keys, sessions, groups, shares, models, an export and a delete", async () => {
    const call = caller(await h.signIn("reader"));
    const first = (await call("POST", "/chat/send", { message: "monstera light" })) as { contextId: string; messageId: string };
    await call("POST", "/chat/send", { message: "and water", contextId: first.contextId });
    await h.settled();
    sent.clear();
    await call("GET", "/contexts?limit=20");
    await call("GET", `/contexts/${first.contextId}`);
    await call("GET", "/contexts/search?q=monstera");
    await call("PATCH", `/contexts/${first.contextId}`, { name: "Light" });
    await call("PUT", `/contexts/${first.contextId}/messages/${first.messageId}/rating`, { rating: "up" });
    const group = (await call("POST", "/groups", { name: "Plants" })) as { id: string };
    await call("PATCH", `/contexts/${first.contextId}`, { groupId: group.id });
    await call("GET", "/groups");
    await call("POST", `/contexts/${first.contextId}/share`, {});
    await call("GET", "/shares");
    await call("GET", "/credits");
    await call("GET", "/usage");
    await call("GET", "/usage/messages");
    await call("GET", "/me");
    await call("GET", "/me/sessions");
    await call("POST", "/keys", { name: "k" });
    await call("GET", "/keys");
    await call("GET", "/models");
    await call("GET", `/contexts/${first.contextId}/export`);
    await call("DELETE", `/contexts/${first.contextId}`);
    expect(sent.size).toBeGreaterThan(20);
    expect(await scansOf(sent)).toEqual([]);
    expect(await personWideReadsOf(sent)).toEqual([]);
  });
});

describe("groups and imports", () => {
  it("find a group's conversations and an import's sources by their partial indexes, in the statements and in the foreign keys' checks", async () => {
    const call = caller(await h.signIn("sorter"));
    const first = (await call("POST", "/chat/send", { message: "pothos" })) as { contextId: string };
    const group = (await call("POST", "/groups", { name: "Vines" })) as { id: string };
    await call("PATCH", `/contexts/${first.contextId}`, { groupId: group.id });
    const exported = await call("GET", `/contexts/${first.contextId}/export`);
    await h.settled();
    sent.clear();
    await call("GET", `/contexts?groupId=${group.id}`);
    // The second import finds the first's copy by its source, and the first finds the original by its id.
    const imported = (await call("POST", "/contexts/import", exported)) as { skipped: number };
    const again = (await call("POST", "/contexts/import", exported)) as { skipped: number };
    expect([imported.skipped, again.skipped]).toEqual([1, 1]);
    await call("DELETE", `/groups/${group.id}`);
    expect(sent.size).toBeGreaterThan(3);
    expect(await scansOf(sent, { foreignKeyChecks: true })).toEqual([]);
    // Not a scan, but as bad at scale: every one of the person's contexts read for each one imported.
    const statement = (pattern: RegExp) => [...sent].find((sql) => pattern.test(sql)) ?? "";
    expect(await planOf(statement(/^insert into "contexts".*imported_from =/s))).toContain(
      "SEARCH c USING COVERING INDEX contexts_user_imported_idx (user_id=? AND imported_from=?)",
    );
    expect(await planOf(statement(/^delete from "groups"/))).toContain("SEARCH contexts USING COVERING INDEX contexts_group_idx (group_id=?)");
  });
});

describe("an account's erasure", () => {
  it("finds the account's rows by an index, in its statements and in the foreign keys' checks of the rows it deletes", async () => {
    const call = caller(await h.signIn("leaver"));
    const first = (await call("POST", "/chat/send", { message: "ficus" })) as { contextId: string };
    await call("POST", "/chat/send", { message: "and light", contextId: first.contextId });
    await call("POST", `/contexts/${first.contextId}/share`, {});
    await call("POST", "/groups", { name: "Trees" });
    await call("POST", "/keys", { name: "k" });
    const { id } = (await call("GET", "/me")) as { id: string };
    await h.settled();
    sent.clear();
    await call("DELETE", "/me", { confirm: id });
    expect(sent.size).toBeGreaterThan(5);
    expect(await scansOf(sent, { foreignKeyChecks: true })).toEqual([]);
  });
});

