import { copyFileSync, renameSync, rmSync } from "node:fs";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("GET /health", () => {
  it("answers ok when the database can be read and written", async () => {
    h = await createHarness();
    const res = await h.request("/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("answers 503 while the database is read-only, and ok again once it can be written", async () => {
    h = await createHarness();
    // What a read-only file or mount does to the server's connection (the tests run as
    // root, whom chmod does not stop).
    await h.db.run(sql`PRAGMA query_only = ON`);
    await expectError(await h.request("/health"), 503, /database is read-only/);
    await h.db.run(sql`PRAGMA query_only = OFF`);
    expect((await h.request("/health")).status).toBe(200);
  });

  it("answers 503 once the database file is deleted under the running server", async () => {
    h = await createHarness();
    expect((await h.request("/health")).status).toBe(200);
    rmSync(h.dbFile);
    const body = await expectError(await h.request("/health"), 503, /database file was deleted or replaced/);
    // The path is for the operator's log, not for whoever asks /health.
    expect(body.message).not.toContain(h.dbFile);
    expect(h.logs.text()).toContain(h.dbFile);
  });

  it("answers 503 once another file is put at the database's path", async () => {
    h = await createHarness();
    copyFileSync(h.dbFile, `${h.dbFile}.copy`);
    renameSync(`${h.dbFile}.copy`, h.dbFile);
    await expectError(await h.request("/health"), 503, /database file was deleted or replaced/);
  });
});
