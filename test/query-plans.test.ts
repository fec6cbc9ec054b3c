import { createClient, type Client } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";

// Every statement a chat message runs, as SQLite plans it: none may read a table whole. A
// full scan costs nothing on a test's few rows and grows with every message a service keeps:
// the check of the reply a message follows once compared a column with itself and read the
// whole messages table for each such message.

/**
 * Tables whose rows live only while an exchange is in flight (a hold until its exchange
 * settles, a reply until it is stored): their size is the number of requests at once, not
 * the service's history, and their few scans (the user's abandoned holds and replies, a
 * limited key's holds) are left to it rather than given indexes every message would write.
 */
const IN_FLIGHT = new Set(["credit_holds", "running_replies"]);

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

    const scans: string[] = [];
    // Rows made in the statement itself (json_each, a CTE's rows, a constant row) are not tables.
    const tables = new Set((await planner.execute("select name from sqlite_schema where type = 'table'")).rows.map((r) => String(r.name)));
    for (const sql of sent) {
      if (!/^\s*(select|insert|update|delete|with)\b/i.test(sql)) continue;
      for (const step of await planOf(sql)) {
        const scanned = /^SCAN (\S+)(.*)$/.exec(step);
        if (!scanned || /VIRTUAL TABLE|CONSTANT ROW/.test(step)) continue;
        const [, name] = scanned;
        // An alias (`messages q`) is looked up by what the statement names it after.
        const table = tables.has(name!) ? name : new RegExp(`(?:from|join)\\s+"?(\\w+)"?\\s+(?:as\\s+)?"?${name}"?(?:\\s|\\)|,|$)`, "i").exec(sql)?.[1];
        if (table && tables.has(table) && !IN_FLIGHT.has(table)) scans.push(`${step} (${table}) in: ${sql.replace(/\s+/g, " ").slice(0, 160)}`);
      }
    }
    expect(scans).toEqual([]);
  });
});
