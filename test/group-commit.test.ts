import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client, type ResultSet } from "@libsql/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { groupCommits } from "../src/platform/node/group-commit";

let dir: string;
let client: Client;
let reader: Client;
let transactions: number;
/** The client's batch, grouped. */
let grouped: ReturnType<typeof groupCommits<ResultSet>>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plant-chat-group-"));
  const url = `file:${join(dir, "group.db")}`;
  client = createClient({ url, concurrency: 1 });
  await client.execute("PRAGMA journal_mode = WAL");
  await client.execute("create table notes (id integer primary key, text text not null)");
  // Count the transactions the driver runs, beneath the grouping.
  transactions = 0;
  grouped = groupCommits((...args: Parameters<Client["batch"]>) => {
    transactions++;
    return client.batch(...args);
  });
  reader = createClient({ url });
});
afterEach(() => {
  client.close();
  reader.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (id: number, text: string | null) => ({ sql: "insert into notes (id, text) values (?, ?) returning id", args: [id, text] });
const stored = async () => (await reader.execute("select id from notes order by id")).rows.map((r) => Number(r.id));

describe("group commit on the embedded database", () => {
  it("commits the batches of one turn in one transaction, and answers each only once it is committed", async () => {
    const seen: number[][] = [];
    const batches = [1, 2, 3].map((id) =>
      grouped([insert(id * 10, "a"), insert(id * 10 + 1, "b")]).then(async (results) => {
        seen.push(await stored()); // another connection already sees it
        return results.map((r) => Number(r.rows[0]!.id));
      }),
    );
    expect(await Promise.all(batches)).toEqual([
      [10, 11],
      [20, 21],
      [30, 31],
    ]);
    expect(transactions).toBe(1);
    for (const rows of seen) expect(rows).toEqual([10, 11, 20, 21, 30, 31]);
  });

  it("fails only the batch whose statement fails, keeping the others of its turn", async () => {
    const outcomes = await Promise.allSettled([
      grouped([insert(1, "kept")]),
      grouped([insert(2, "lost with its batch"), insert(3, null)]),
      grouped([insert(4, "kept too")]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/NOT NULL/);
    expect(await stored()).toEqual([1, 4]);
  });

  it("runs a batch alone in its turn as one transaction, as before", async () => {
    await grouped([insert(7, "alone")]);
    await grouped([insert(8, "alone again")]);
    expect(transactions).toBe(2);
    expect(await stored()).toEqual([7, 8]);
  });
});
