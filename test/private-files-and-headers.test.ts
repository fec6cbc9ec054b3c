import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/platform/config";
import { createNodeDeps } from "../src/platform/node/node-deps";
import { createHarness, createMemoryLogger, type Harness } from "./support/harness";
import { BUILT_DATABASE_THREAD } from "./support/build-server";

// The small ones of issue 24: the database and key files were created world-readable (0644),
// and JSON replies carried no X-Content-Type-Options: nosniff.

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe("the data folder", () => {
  const config = parseConfig({ AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "a", LOG_LEVEL: "error" });
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "data-folder-"));
    chmodSync(root, 0o755);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const open = async (folder: string, logs = createMemoryLogger()) => {
    const node = await createNodeDeps(config, { databaseUrl: `file:${join(folder, "local.db")}`, builtDatabaseThread: BUILT_DATABASE_THREAD, log: logs.log });
    // A write, so that SQLite makes its -wal and -shm files.
    await node.deps.db.run("create table if not exists t (x)");
    node.client.close();
    return logs;
  };

  it("is made 0700, with the database, its -wal and -shm, and the session key 0600", async () => {
    const folder = join(root, "fresh", "data");
    await open(folder);
    expect(modeOf(folder)).toBe("700");
    for (const file of ["local.db", "local.db-wal", "local.db-shm", "session-key.json"]) expect([file, modeOf(join(folder, file))]).toEqual([file, "600"]);
  });

  it("is made private again at start when it was looser, saying so", async () => {
    const folder = join(root, "fresh", "data");
    chmodSync(folder, 0o755);
    for (const file of ["local.db", "session-key.json"]) chmodSync(join(folder, file), 0o644);
    const logs = await open(folder);
    expect(modeOf(folder)).toBe("700");
    for (const file of ["local.db", "session-key.json"]) expect(modeOf(join(folder, file))).toBe("600");
    expect(logs.text()).toMatch(/local\.db could be read by other users of this machine \(mode 644\): made it 600/);
  });

  it("keeps a folder that holds the operator's other files as it is, its own files private, and says how to make it private", async () => {
    const folder = join(root, "shared");
    await open(folder);
    chmodSync(folder, 0o755);
    writeFileSync(join(folder, "notes.txt"), "mine");
    chmodSync(join(folder, "local.db"), 0o644);
    const logs = await open(folder);
    expect(modeOf(folder)).toBe("755");
    expect(modeOf(join(folder, "local.db"))).toBe("600");
    expect(modeOf(join(folder, "notes.txt"))).not.toBe("600");
    expect(logs.text()).toMatch(/holds other files too, so it is left as it is/);
  });
});

describe("X-Content-Type-Options: nosniff", () => {
  let h: Harness;
  let base: string;
  beforeAll(async () => {
    h = await createHarness();
    base = await h.listen();
  });
  afterAll(() => h.close());

  it("is on every reply: JSON, errors of every kind, a preflight, the document", async () => {
    const token = await h.signIn("sniff");
    const replies = [
      await fetch(`${base}/health`),
      await fetch(`${base}/plants`, { headers: { Authorization: `Bearer ${token}` } }),
      await fetch(`${base}/plants`),
      await fetch(`${base}/no-such-thing`),
      await fetch(`${base}/contexts/search`, { method: "DELETE", headers: { Authorization: `Bearer ${token}` } }),
      await fetch(`${base}/plants`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "text/plain" }, body: "x" }),
      await fetch(`${base}/plants`, { method: "OPTIONS", headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST" } }),
      await fetch(`${base}/openapi.json`),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 200, 401, 404, 405, 415, 204, 200]);
    for (const res of replies) expect([res.url, res.headers.get("x-content-type-options")]).toEqual([res.url, "nosniff"]);
  });

  it("is on the replies the Node server makes before routing (a request it cannot parse)", async () => {
    const { port } = new URL(base);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => socket.write("GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"));
      let text = "";
      socket.on("data", (c: Buffer) => (text += c.toString()));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/);
  });
});
