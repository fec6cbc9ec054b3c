// GET /plants?limit=20 with a JWT through the whole app, against a floor: a bare
// @hono/node-server app running the same indexed libSQL query with no auth. Same run,
// same database file. Target: app >= 0.6 x floor, zero errors, one round trip a request.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { createApp } from "../src/app";
import { userIdFor } from "../src/auth/identity";
import { openDatabase } from "../src/open-database";
import { BENCH_ISSUER, benchRuntime, benchToken, countRoundTrips, load, machine, table, writeSection } from "./support";

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const dir = mkdtempSync(join(tmpdir(), "bench-plants-"));
const { client, db } = await openDatabase(`file:${join(dir, "bench.db")}`);

const token = await benchToken("user:bench");
const runtime = await benchRuntime();
const trips = countRoundTrips(client);

const app = createApp(() => ({ ...runtime, db }));
const listen = (fetch: (req: Request) => Response | Promise<Response>) =>
  new Promise<ServerType>((resolve) => {
    const s = serve({ fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
const appServer = await listen(app.fetch);
const appUrl = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`;

// Seed 200 plants for the bench user through the API itself.
for (let id = 1; id <= 200; id++) {
  const res = await app.request("/plants", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ id, name: `plant ${id}`, tag: id % 2 ? "odd" : undefined }),
  });
  if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
}

const ownerId = await userIdFor(BENCH_ISSUER, "user:bench");
// The same statement the app sends (20 rows plus one to learn whether more remain).
const floor = new Hono().get("/plants", async (c) => {
  const rs = await client.execute({
    sql: "select cast(id as text), name, tag from plants where owner_id = ? order by id limit 21",
    args: [ownerId],
  });
  return c.json(rs.rows.slice(0, 20).map((r) => (r.tag === null ? { name: r.name } : { name: r.name, tag: r.tag })));
});
const floorServer = await listen(floor.fetch);
const floorUrl = `http://127.0.0.1:${(floorServer.address() as AddressInfo).port}`;

const warm = async () => {
  await load("warmup", `${floorUrl}/plants?limit=20`, { seconds: 2 });
  await load("warmup", `${appUrl}/plants?limit=20`, { seconds: 2, headers: { Authorization: `Bearer ${token}` } });
};
await warm();

const floorResult = await load("floor: bare node-server + one libSQL query, no auth", `${floorUrl}/plants?limit=20`, { seconds });
const tripsBefore = trips();
const appResult = await load("app: GET /plants?limit=20 with a JWT (ES256)", `${appUrl}/plants?limit=20`, {
  seconds,
  headers: { Authorization: `Bearer ${token}` },
});
const tripsPerRequest = (trips() - tripsBefore) / appResult.requests;
const ratio = appResult.rps / floorResult.rps;

const body = `${machine()}; ${seconds} s per run, 16 connections, load from autocannon in a child process.

${table([floorResult, appResult])}

- Ratio app / floor: **${ratio.toFixed(2)}** (target ≥ 0.60): ${ratio >= 0.6 ? "met" : "NOT met"}.
- Database round trips per request: **${tripsPerRequest.toFixed(3)}** (target 1).
- Errors: ${appResult.errors + appResult.non2xx} (target 0).`;
console.log(`\n## Plants\n\n${body}\n`);
writeSection("Plants", body);

appServer.close();
floorServer.close();
client.close();
rmSync(dir, { recursive: true, force: true });
