import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildServerIfNeeded } from "../scripts/build-server.mjs";
import { startServerProcess, type ServerProcess } from "./support/server-process";

// `npm start` runs dist/server.js, bundled ahead of time by its prestart hook: the server and
// its database thread as plain JavaScript on plain Node (started here with a hook that fails
// any import of tsx), finding migrations/ and web/dist where the sources do.

let server: ServerProcess;
beforeAll(async () => {
  await buildServerIfNeeded();
  server = await startServerProcess({}, { forbidTsx: true });
}, 120_000);
afterAll(() => server?.close());

describe("the built server (npm start)", () => {
  it("is healthy: the migrated database is written through the built database thread", async () => {
    const res = await fetch(`${server.url}/health`);
    expect([res.status, await res.json()]).toEqual([200, { status: "ok" }]);
  });

  it("logs a name in and keeps a plant's int64 id exact past 2^53", async () => {
    const login = await fetch(`${server.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"alice"}' });
    const { token } = (await login.json()) as { token: string };
    const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const created = await fetch(`${server.url}/plants`, { method: "POST", headers: auth, body: '{"id":9007199254740993,"name":"Monstera"}' });
    expect([created.status, await created.json()]).toEqual([200, { name: "Monstera" }]);
    // Deleted by the same exact id: not 9007199254740992, which a double would have stored.
    expect((await fetch(`${server.url}/plants/9007199254740992`, { method: "DELETE", headers: auth })).status).toBe(404);
    expect((await fetch(`${server.url}/plants/9007199254740993`, { method: "DELETE", headers: auth })).status).toBe(204);
  });

  it("looks for the web client's build beside src/, as from source", () => {
    const webDist = resolve(import.meta.dirname, "../web/dist");
    if (existsSync(resolve(webDist, "index.html"))) expect(server.output()).not.toContain("The web client is not built");
    else expect(server.output()).toContain(`The web client is not built (no ${webDist}/index.html)`);
  });
});
