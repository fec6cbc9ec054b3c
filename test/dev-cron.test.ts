import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWebIfNeeded } from "../web/scripts/build-if-needed.mjs";
import { migrationFiles } from "../scripts/local-d1-migrations";
import { pdf } from "./support/files";
import { devStateDir, startDevProcess, wrangler, type DevProcess } from "./support/dev-process";

// The README's way of running the daily job locally, through the real `npm run dev`: the
// Worker with its [assets] and `run_worker_first`, in workerd, over a local D1 database (and
// a PDF upload on the way, whose pdf.js is a module of its own).
// `worker.scheduled()` alone (test/worker/chat.test.ts) cannot show that the route reaches it.

const state = devStateDir();
let dev: DevProcess | undefined;

const d1 = (sql: string) =>
  JSON.parse(wrangler(state.dir, ["d1", "execute", "DB", "--local", "--persist-to", state.persistTo, "--json", "--command", sql])) as {
    results: Record<string, unknown>[];
  }[];

beforeAll(() => buildWebIfNeeded(), 120_000);

afterAll(async () => {
  await dev?.stop();
  state.remove();
});

describe("the cron trigger under npm run dev", () => {
  it("runs the daily job at GET /__scheduled, over the local D1 database", async () => {
    // scripts/dev.ts migrates the fresh --persist-to folder: a person logs in and names a context.
    dev = await startDevProcess(state.dir, state.persistTo);
    const { token } = (await (
      await fetch(`${dev.url}/auth/local`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"name":"cron"}' })
    ).json()) as { token: string };
    const created = await fetch(`${dev.url}/contexts`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: '{"name":"Repotting the monstera"}',
    });
    expect(created.status, await created.clone().text()).toBe(201);
    // A PDF's text, read by pdf.js, which the Worker imports as a module of its own (wrangler.toml).
    const form = new FormData();
    form.set("file", new Blob([pdf(["Repot in spring."])]), "repot.pdf");
    const uploaded = await fetch(`${dev.url}/attachments`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: form });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    expect(await uploaded.json()).toMatchObject({ type: "application/pdf", pages: 1, chars: 16 });
    // Sessions work out of the box too: scripts/dev.ts hands the Worker the session key.
    const session = await fetch(`${dev.url}/auth/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"local":{"name":"cron"}}' });
    expect(session.status, await session.clone().text()).toBe(200);

    // Its name waits to be indexed for search: on Workers only a search of theirs or the daily job does it.
    const run = await fetch(`${dev.url}/__scheduled?cron=0+0+*+*+*`);
    expect(run.status, await run.clone().text()).toBe(200);
    expect(await run.text()).toBe("Ran scheduled event");

    // The job runs in the event's waitUntil: its closing log line says what it did.
    const logged = (await dev.logged(/\{"level":"info"[^\n]*"msg":"daily rollover ran"[^\n]*\}(?=\n)/))?.[0];
    expect(logged, dev.output()).toBeDefined();
    expect(JSON.parse(logged!)).toMatchObject({ indexedSearchEntries: 1, day: new Date().toISOString().slice(0, 10) });

    await dev.stop();
    const [pending, indexed, migrations] = d1(
      "select count(*) as n from search_pending; select count(*) as n from search_fts where search_fts match 'monstera'; select name from d1_migrations order by id",
    );
    expect([pending!.results, indexed!.results]).toEqual([[{ n: 0 }], [{ n: 1 }]]);
    // Each file applied is recorded where `wrangler d1 migrations apply` looks, so that it applies none twice.
    expect(migrations!.results).toEqual(migrationFiles().map(({ name }) => ({ name })));
  }, 180_000); // wrangler dev starts workerd after the migrations: seconds, more on a busy machine
});
