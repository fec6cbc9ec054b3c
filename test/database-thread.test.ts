import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, LibsqlBatchError, LibsqlError, type Client, type ResultSet } from "@libsql/client";
import Database from "libsql";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ThreadClient } from "../src/platform/node/database-thread";
import { openDatabase } from "../src/platform/node/open-database";
import { nativeStatements } from "../src/platform/node/native-connection";
import { BUILT_DATABASE_THREAD } from "./support/build-server";

// The database thread stands in for @libsql/client's own execution on an embedded file,
// so each case runs on both, over the same file, and their answers are compared. The thread
// runs its bundle from dist/ (it starts without tsx), except where a case opens a file it
// cannot create and where the server's openDatabase opens one: from source, through tsx.
let dir: string;
let path: string;
let plain: Client;
let native: Client;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plant-chat-native-"));
  path = join(dir, "native.db");
  plain = createClient({ url: `file:${path}`, concurrency: 1 });
  await plain.execute("PRAGMA journal_mode = WAL");
  await plain.batch(
    [
      "create table notes (id integer primary key, text text not null unique, n integer, data blob)",
      "create table tags (note_id integer not null references notes(id), tag text not null)",
      "create trigger notes_tag after insert on notes begin insert into tags (note_id, tag) values (new.id, 'new'); end",
    ],
    "write",
  );
  native = await ThreadClient.open(path, BUILT_DATABASE_THREAD);
  await native.execute("PRAGMA foreign_keys = ON");
  await plain.execute("PRAGMA foreign_keys = ON");
});
afterEach(() => {
  plain.close();
  native.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a caller can observe of a result: columns, rows by position and by name, counts. */
function observed(rs: ResultSet) {
  return {
    columns: rs.columns,
    columnTypes: rs.columnTypes,
    positions: rs.rows.map((r) => Array.from(r as ArrayLike<unknown>)),
    names: rs.rows.map((r) => ({ ...r })),
    keys: rs.rows.map((r) => Object.keys(r)),
    json: rs.rows.map((r) => JSON.stringify(r)),
    lengths: rs.rows.map((r) => r.length),
    rowsAffected: rs.rowsAffected,
    lastInsertRowid: rs.lastInsertRowid,
  };
}

const insert = (id: number, text: string) => ({ sql: "insert into notes (id, text, n, data) values (?, ?, ?, ?)", args: [id, text, id * 10, new Uint8Array([id, 255]).buffer] });

describe("statements run on the database thread", () => {
  it("answers reads and writes as @libsql/client does", async () => {
    const written = observed(await native.execute(insert(1, "one")));
    expect(written).toEqual({ ...observed(await plain.execute(insert(2, "two"))), lastInsertRowid: 1n });
    expect(written.rowsAffected).toBe(1);
    const sql = "select notes.id, text, n, data, tags.tag, notes.id as id, null as missing, true as yes from notes join tags on tags.note_id = notes.id order by notes.id";
    expect(observed(await native.execute(sql))).toEqual(observed(await plain.execute(sql)));
    // Named arguments, with each prefix @libsql/client accepts, and the same statement again.
    for (const prefix of [":", "@", "$", ""]) {
      const stmt = { sql: "select text from notes where id = :id", args: { [`${prefix}id`]: 2 } };
      expect(observed(await native.execute(stmt))).toEqual(observed(await plain.execute(stmt)));
    }
    const returning = { sql: "update notes set n = n + ? where id > ? returning id, n", args: [1, 0] };
    const updated = observed(await native.execute(returning));
    expect(updated.names).toEqual([{ id: 1, n: 11 }, { id: 2, n: 21 }]);
    expect(updated).toEqual(observed(await plain.execute({ ...returning, args: [0, 0] })));
  });

  it("refuses an integer past 2^53 rather than rounding it, and arguments it cannot store", async () => {
    const big = "select 9007199254740993 as big";
    await expect(plain.execute(big)).rejects.toThrow(RangeError);
    await expect(native.execute(big)).rejects.toThrow(RangeError);
    expect((await native.execute("select cast(9007199254740993 as text) as big")).rows[0]!.big).toBe("9007199254740993");
    await expect(native.execute({ sql: "select ?", args: [Number.NaN] })).rejects.toThrow(RangeError);
    await expect(native.execute({ sql: "select ?", args: [undefined as never] })).rejects.toThrow(TypeError);
    expect((await native.execute({ sql: "select ? as at, ? as yes", args: [new Date(5), true] })).rows[0]).toMatchObject({ at: 5, yes: 1 });
  });

  it("fails with @libsql/client's error and codes, and a failed batch keeps nothing", async () => {
    await native.execute(insert(1, "one"));
    const failed = await native.batch([insert(2, "two"), insert(3, "one")], "write").catch((e: unknown) => e);
    const expected = await plain.batch([insert(2, "two"), insert(3, "one")], "write").catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(LibsqlBatchError);
    expect(failed).toMatchObject({ code: "SQLITE_CONSTRAINT", extendedCode: "SQLITE_CONSTRAINT_UNIQUE", statementIndex: 1, message: (expected as Error).message });
    expect((await plain.execute("select id from notes")).rows.map((r) => r.id)).toEqual([1]);
    // The connection is usable after the failure: no transaction was left open.
    await native.batch([insert(2, "two")], "write");
    expect((await plain.execute("select count(*) as n from tags")).rows[0]!.n).toBe(2);
    await expect(native.execute("select * from nowhere")).rejects.toMatchObject({ code: "SQLITE_ERROR" });
    await expect(native.execute({ sql: "insert into tags (note_id, tag) values (?, 'x')", args: [99] })).rejects.toMatchObject({ extendedCode: "SQLITE_CONSTRAINT_FOREIGNKEY" });
  });

  it("runs a script of statements on the same connection, and refuses interactive transactions", async () => {
    await native.executeMultiple("insert into notes (id, text) values (7, 'a'); insert into notes (id, text) values (8, 'b');");
    expect((await plain.execute("select count(*) as n from tags")).rows[0]!.n).toBe(2);
    await expect(native.executeMultiple("insert into notes (id, text) values (7, 'again')")).rejects.toMatchObject({ code: "SQLITE_CONSTRAINT" });
    await expect(native.transaction("write")).rejects.toThrow(/batch/);
    await expect(native.sync()).rejects.toMatchObject({ code: "SYNC_NOT_SUPPORTED" });
  });

  it("migrates as @libsql/client does: in one transaction, with foreign keys off during it and on after", async () => {
    expect(native.protocol).toBe("file");
    expect(native.closed).toBe(false);
    // A row whose parent comes later in the same migration: refused with foreign keys on.
    const steps = ["insert into tags (note_id, tag) values (5, 'early')", "insert into notes (id, text) values (5, 'parent')"];
    await native.migrate(steps);
    expect((await plain.execute("select count(*) as n from tags where tag = 'early'")).rows[0]!.n).toBe(1);
    expect((await native.execute("PRAGMA foreign_keys")).rows[0]![0]).toBe(1);
    await expect(native.migrate(["insert into notes (id, text) values (6, 'kept?')", "select * from nowhere"])).rejects.toBeInstanceOf(LibsqlBatchError);
    expect((await plain.execute("select count(*) as n from notes where id = 6")).rows[0]!.n).toBe(0);
  });

  it("keeps working when more distinct statements have run than it keeps prepared", async () => {
    for (let i = 0; i < 1100; i++) expect((await native.execute(`select ${i} as v`)).rows[0]!.v).toBe(i);
    expect((await native.execute("select 0 as v")).rows[0]!.v).toBe(0);
    // A statement whose slot goes to another while its batch still waits for its turn to
    // commit: it runs as it was sent.
    const waiting = native.batch(["select 'first' as v"], "write");
    const others = Array.from({ length: 1100 }, (_, i) => native.batch([`select ${i} as v, 'other' as w`], "write"));
    expect((await waiting)[0]!.rows[0]!.v).toBe("first");
    expect((await Promise.all(others)).map((r) => r[0]!.rows[0]!.v)).toEqual(Array.from({ length: 1100 }, (_, i) => i));
  });

  it("commits concurrent batches together and fails only the one whose statement fails", async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => native.batch([insert(i + 1, i === 7 ? "note 3" : `note ${i + 1}`)], "write")));
    expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: 20 }, (_, i) => (i === 7 ? "rejected" : "fulfilled")));
    expect((outcomes[7] as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_CONSTRAINT", statementIndex: 0 });
    expect((await plain.execute("select count(*) as n from notes")).rows[0]!.n).toBe(19);
    // Each was answered with its own results, in the order asked.
    const ids = await Promise.all([5, 6].map(async (n) => (await native.batch([{ sql: "select id from notes where id = ?", args: [n] }], "read"))[0]!.rows[0]!.id));
    expect(ids).toEqual([5, 6]);
  });

  it("answers what was asked before it closed, refuses what comes after, and fails to open a file it cannot create", async () => {
    const asked = native.batch([insert(1, "asked before closing")], "write");
    native.close();
    await expect(native.execute("select 1")).rejects.toMatchObject({ code: "CLIENT_CLOSED" });
    expect((await asked)[0]!.rowsAffected).toBe(1);
    expect((await plain.execute("select text from notes")).rows.map((r) => r.text)).toEqual(["asked before closing"]);
    const nowhere = join(dir, "missing", "folder", "x.db");
    await expect(ThreadClient.open(nowhere)).rejects.toBeInstanceOf(LibsqlError);
    expect(native.closed).toBe(true);
    expect(() => native.reconnect()).toThrow(/closed/);
  });
});

describe("the thread's native statements", () => {
  it("prepares each statement once on its connection, BEGIN and COMMIT included", () => {
    const connection = new Database(path);
    const prepared: string[] = [];
    // The connection as nativeStatements uses it, with each statement it prepares written down.
    const watched = {
      prepare: (sql: string) => {
        prepared.push(sql);
        return connection.prepare(sql);
      },
      exec: (sql: string) => connection.exec(sql),
      get inTransaction() {
        return connection.inTransaction;
      },
      close: () => connection.close(),
    };
    const statements = nativeStatements(watched as unknown as Parameters<typeof nativeStatements>[0]);
    for (let i = 1; i <= 3; i++) statements.batch([insert(i, `note ${i}`), { sql: "select count(*) from tags", args: [] }], "write");
    expect(prepared.filter((sql) => sql.startsWith("insert into notes"))).toHaveLength(1);
    expect(prepared.filter((sql) => sql === "BEGIN IMMEDIATE" || sql === "COMMIT")).toHaveLength(2);
    statements.close();
  });
});

describe("the embedded database as the server opens it", () => {
  it("serves on a connection with WAL, synchronous=FULL, foreign keys, a 64 MiB cache and rarer checkpoints", async () => {
    const opened = await openDatabase(`file:${join(dir, "served.db")}`);
    try {
      const pragma = async (name: string) => Object.values((await opened.client.execute(`PRAGMA ${name}`)).rows[0]!)[0];
      expect(await pragma("journal_mode")).toBe("wal");
      expect(await pragma("synchronous")).toBe(2); // FULL
      expect(await pragma("foreign_keys")).toBe(1);
      expect(await pragma("cache_size")).toBe(-65536);
      expect(await pragma("wal_autocheckpoint")).toBe(10000);
    } finally {
      opened.client.close();
    }
  });
});

