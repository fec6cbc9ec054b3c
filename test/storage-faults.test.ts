import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keepSearchIndexed } from "../src/jobs/search-index";
import { createHarness, type Harness } from "./support/harness";

// The embedded database's storage failing under the running Node server: the file deleted,
// the disk full. Nothing acknowledged may be lost, and the server keeps serving.

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(() => h.close());

const addPlant = (token: string, id: number, name = `plant ${id}`) => h.request("/plants", { method: "POST", token, json: { id, name } });

describe("the database file deleted under the server", () => {
  it("refuses every write with 503 and the reason, keeps answering reads, and says so on /health", async () => {
    const token = await h.signIn("rosa");
    expect((await addPlant(token, 1)).status).toBe(200);
    rmSync(h.dbFile);

    for (let id = 2; id < 5; id++) {
      const res = await addPlant(token, id);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe("database_file_lost");
      expect(body.message).toMatch(/deleted or replaced.*nothing was saved.*restart/);
    }
    expect((await h.request("/chat/send", { method: "POST", token, json: { message: "hello" } })).status).toBe(503);
    // What was there is still read from the open file.
    const list = await h.request("/plants", { token });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([{ name: "plant 1" }]);
    const health = await h.request("/health");
    expect(health.status).toBe(503);
    expect(h.logs.text()).toMatch(/write refused: database file/);
  });
});

describe("a full disk", () => {
  it("answers a write that finds no space 507 with the Error body, says so on /health, and recovers by itself", async () => {
    const token = await h.signIn("sam");
    expect((await addPlant(token, 1)).status).toBe(200);
    // SQLite's own limit on the file's pages: past it, a write fails exactly as on a full disk (SQLITE_FULL).
    await h.db.run(sql`PRAGMA max_page_count = 1`);
    let full: Response | undefined;
    for (let id = 2; id < 200 && !full; id++) {
      const res = await addPlant(token, id, `plant ${id} ${"x".repeat(240)}`);
      if (res.status !== 200) full = res;
    }
    expect(full?.status).toBe(507);
    const body = (await full!.json()) as { error: number; code: string; message: string };
    expect(body).toMatchObject({ error: 507, code: "storage_full" });
    expect(body.message).toMatch(/disk is full: nothing was saved/);
    const health = await h.request("/health");
    expect(health.status).toBe(503);
    expect(((await health.json()) as { message: string }).message).toMatch(/disk is full/);
    // Reads go on.
    expect((await h.request("/plants", { token })).status).toBe(200);

    // Space returns: writes and /health work again, with no restart.
    await h.db.run(sql`PRAGMA max_page_count = 1073741823`);
    expect((await addPlant(token, 500)).status).toBe(200);
    expect((await h.request("/health")).status).toBe(200);
  });
});

describe("a read-only database", () => {
  it("answers writes 503 with the reason, and the search indexer backs off until it can write again", async () => {
    const token = await h.signIn("ro");
    expect((await h.request("/contexts", { method: "POST", token, json: { name: "Fern room" } })).status).toBe(201); // waits to be indexed
    // What a read-only file or mount does to the server's connection (the tests run as
    // root, whom chmod does not stop).
    await h.db.run(sql`PRAGMA query_only = ON`);
    const res = await addPlant(token, 1);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "storage_read_only", message: expect.stringMatching(/read-only: nothing was saved/) });
    expect((await h.request("/plants", { token })).status).toBe(200);

    // The indexer's timer runs on a fake clock the test moves. Each try is real database work,
    // done once the indexer has set its next timer: the event loop turns until it has.
    const failures = () => h.logs.lines.filter((l) => l.msg === "could not index search entries").map((l) => l.fields.retryInMs);
    const tryAfter = async (ms: number) => {
      vi.advanceTimersByTime(ms - 1);
      expect(vi.getTimerCount()).toBe(1); // not due yet
      vi.advanceTimersByTime(1);
      expect(vi.getTimerCount()).toBe(0); // trying
      while (vi.getTimerCount() === 0) await new Promise((turned) => setImmediate(turned));
    };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const stop = keepSearchIndexed({ db: h.db, log: h.logs.log }, 10);
    try {
      // Every 10 ms that would be a failure every 10 ms; each failed try doubles the wait.
      let wait = 10;
      for (let i = 0; i < 5; i++, wait *= 2) await tryAfter(wait);
      expect(failures()).toEqual([20, 40, 80, 160, 320]);

      await h.db.run(sql`PRAGMA query_only = OFF`);
      expect((await addPlant(token, 1)).status).toBe(200);
      // The longest wait so far, and a try after it that succeeds: back to every 10 ms, failing no more.
      await tryAfter(320);
      for (let i = 0; i < 30; i++) await tryAfter(10);
      expect(failures()).toHaveLength(5);
    } finally {
      stop();
      vi.useRealTimers();
    }
  });
});

/**
 * Whether files can be made immutable here: chattr +i needs root (or CAP_LINUX_IMMUTABLE)
 * and a file system that keeps the flag (ext4, xfs, btrfs; not tmpfs). Where it cannot,
 * the case below is skipped and says why.
 */
function canMakeImmutable(): boolean {
  const dir = mkdtempSync(join(tmpdir(), "plant-chat-chattr-"));
  const probe = join(dir, "probe");
  writeFileSync(probe, "x");
  try {
    execFileSync("chattr", ["+i", probe], { stdio: "ignore" });
    execFileSync("chattr", ["-i", probe], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const immutable = canMakeImmutable();

describe.skipIf(!immutable)("database files made immutable under the server (chattr +i)", () => {
  it("answers 503 while they are, without ending the process (SIGBUS), and serves again once they are writable", async () => {
    const token = await h.signIn("ivo");
    expect((await addPlant(token, 1)).status).toBe(200);
    // After a write: SQLite's WAL index (-shm) is mapped and in use.
    const files = [h.dbFile, `${h.dbFile}-wal`, `${h.dbFile}-shm`, dirname(h.dbFile)].filter((f) => existsSync(f));
    expect(files).toContain(`${h.dbFile}-shm`);
    execFileSync("chattr", ["+i", ...files]);
    try {
      const write = await addPlant(token, 2);
      expect(write.status).toBe(503);
      expect(await write.json()).toMatchObject({ error: 503, code: "storage_unavailable", message: expect.stringMatching(/cannot be written: nothing was saved/) });
      expect(write.headers.get("Retry-After")).toBe("60");
      expect((await h.request("/plants", { token })).status).toBe(503);
      expect((await h.request("/chat/send", { method: "POST", token, json: { message: "hello" } })).status).toBe(503);
      const health = await h.request("/health");
      expect(health.status).toBe(503);
      expect(((await health.json()) as { message: string }).message).toMatch(/storage refuses writes/);
    } finally {
      execFileSync("chattr", ["-i", ...files]);
    }
    // No restart: the same server writes and reads again.
    expect((await addPlant(token, 3)).status).toBe(200);
    const after = await h.request("/plants", { token });
    expect(await after.json()).toEqual([{ name: "plant 1" }, { name: "plant 3" }]);
  });
});

if (!immutable) console.warn("storage-faults: files cannot be made immutable here (chattr +i needs root and ext4/xfs/btrfs); the immutable-files case is skipped");
