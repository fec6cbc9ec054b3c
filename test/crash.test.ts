import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { count, eq, sum } from "drizzle-orm";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { creditDays, creditHolds, idempotencyKeys, messages, usageEvents } from "../schema/index";
import { dbFromLibsql, type Db } from "../src/platform/db";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { serverEntryArgs } from "./support/server-process";

// The real Node server in its own process, killed with SIGKILL in the middle of exchanges
// and started again on the same database file: what `npm start` goes through in a crash.

const ROOT = resolve(import.meta.dirname, "..");
const SECRET = "crash-test-secret-0123456789abcdef";
const ISSUER = "https://idp.crash.test/";
const AUDIENCE = "plant-chat-crash-test";

let up: FakeUpstream;
let dir: string;
let client: Client;
let db: Db;
let server: ChildProcess | undefined;

beforeAll(async () => {
  up = await startFakeUpstream();
  dir = mkdtempSync(join(tmpdir(), "plant-chat-crash-"));
});
afterAll(async () => {
  server?.kill("SIGKILL");
  client?.close();
  await up.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A port the OS just handed out and took back: free for the server to bind. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, "127.0.0.1", done));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((done) => probe.close(() => done()));
  return port;
}

/** Starts the server as `npm start` does (dist/server.js on plain Node, not through npx) and waits until it listens. */
async function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, serverEntryArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOST: "127.0.0.1",
      PORT: String(port),
      DATABASE_URL: `file:${join(dir, "chat.db")}`,
      AUTH_HS256_SECRET: SECRET,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: AUDIENCE,
      SVC_MODEL_BASE_URL: up.baseUrl,
      // Long enough that no exchange times out before the kill, even on a loaded machine.
      MODEL_TIMEOUT_MS: "4000",
      DAILY_CREDITS: "100",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<never>((_, reject) => child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${output}`))));
  // It logs "listening" once its socket is bound.
  const ready = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"listening"')) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
  });
  await Promise.race([ready, exited]);
  exited.catch(() => {}); // later exits are the test's doing
  return child;
}

async function kill(child: ChildProcess, signal: NodeJS.Signals) {
  const exited = new Promise((done) => child.once("exit", done));
  child.kill(signal);
  await exited;
}

const token = (name: string) =>
  new SignJWT({ name })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(`user:${name}`)
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(SECRET));

/** What the database says, over all users: these must agree once nothing is in flight. */
async function ledger() {
  const [credits] = await db.select({ used: sum(creditDays.used) }).from(creditDays);
  const [usage] = await db.select({ credits: sum(usageEvents.credits) }).from(usageEvents);
  const [stored] = await db.select({ n: count() }).from(messages);
  const [holds] = await db.select({ n: count() }).from(creditHolds);
  const [pending] = await db.select({ n: count() }).from(idempotencyKeys).where(eq(idempotencyKeys.status, 0));
  return { credits: Number(credits?.used ?? 0), usage: Number(usage?.credits ?? 0), exchanges: stored!.n / 2, holds: holds!.n, pendingKeys: pending!.n };
}

describe("a server killed in the middle of exchanges", () => {
  it("refunds what it never stored after a restart, and charges an idempotent retry at most once in total", { timeout: 120_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const send = async (who: string, body: Record<string, unknown>, key?: string) =>
      fetch(`${base}/chat/send`, {
        method: "POST",
        headers: { authorization: `Bearer ${await token(who)}`, "content-type": "application/json", ...(key && { "idempotency-key": key }) },
        body: JSON.stringify(body),
      });

    server = await startServer(port);
    client = createClient({ url: `file:${join(dir, "chat.db")}` });
    db = dbFromLibsql(client);

    // Finished exchanges, one of them with a key.
    up.mode = "ok";
    expect((await send("alice", { message: "stored one" }, "finished")).status).toBe(200);
    expect((await send("alice", { message: "stored two" })).status).toBe(200);
    expect((await send("bob", { message: "stored three" })).status).toBe(200);

    // Exchanges in flight when the process dies: the upstream has them and never answers.
    up.mode = "slow";
    const arrived = up.requests.length;
    const inFlight = [
      send("alice", { message: "lost with a key" }, "crash-a"),
      send("alice", { message: "lost without a key" }),
      send("bob", { message: "lost with a key" }, "crash-b"),
      send("bob", { message: "lost while streaming", stream: true }),
    ].map((reply) => reply.then((r) => r.text()).catch((err: unknown) => err));
    await expect.poll(() => up.requests.length - arrived, { timeout: 20_000 }).toBe(4);
    await kill(server, "SIGKILL");
    await Promise.all(inFlight);

    // What the dead process left: four charges with no message, each still held.
    expect(await ledger()).toEqual({ credits: 7, usage: 3, exchanges: 3, holds: 4, pendingKeys: 2 });

    server = await startServer(port);
    // The restarted server releases them once they are older than the model timeout plus the margin.
    await expect.poll(async () => (await ledger()).holds, { timeout: 30_000, interval: 250 }).toBe(0);
    expect(await ledger()).toEqual({ credits: 3, usage: 3, exchanges: 3, holds: 0, pendingKeys: 0 });

    // The clients retry with their keys: each runs once, and is charged once in total.
    up.mode = "ok";
    const retryA = await send("alice", { message: "lost with a key" }, "crash-a");
    expect(retryA.status).toBe(200);
    expect(retryA.headers.get("idempotent-replayed")).toBeNull();
    expect((await send("bob", { message: "lost with a key" }, "crash-b")).status).toBe(200);
    const again = await send("alice", { message: "lost with a key" }, "crash-a");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await send("alice", { message: "stored one" }, "finished")).headers.get("idempotent-replayed")).toBe("true");
    expect(await ledger()).toEqual({ credits: 5, usage: 5, exchanges: 5, holds: 0, pendingKeys: 0 });

    await kill(server, "SIGTERM");
    server = undefined;
  });
});
