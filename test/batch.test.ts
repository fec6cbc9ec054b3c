import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Batch, bind, eachRow, firstRow, selectStep, selectTemplate, type Db } from "../src/platform/db";
import { plants, users } from "../schema/index";
import { openDatabaseFile } from "./support/harness";

// Batch (src/platform/db.ts): statements built once with placeholders, bound per call, run
// in one transaction through the driver's own batch, each result read by its slot. The
// chat path runs on it, on Node here and on D1 in test/worker/chat.test.ts.
let dir: string;
let opened: Awaited<ReturnType<typeof openDatabaseFile>>;
let db: Db;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plant-chat-batch-"));
  opened = await openDatabaseFile(join(dir, "batch.db"));
  db = opened.db;
  await db.insert(users).values({ id: "usr_a", issuer: "https://idp.example/", subject: "a", name: "a", createdAt: new Date(0) });
});
afterEach(() => {
  opened.client.close();
  rmSync(dir, { recursive: true, force: true });
});

const inserted = { id: plants.id, name: plants.name };
const insertPlant = () =>
  selectTemplate(
    inserted,
    db
      .insert(plants)
      .values({ id: sql.placeholder("id"), ownerId: sql.placeholder("ownerId"), name: sql.placeholder("name"), tag: null })
      .returning(inserted),
  );
const named = { name: plants.name };
const namesOf = () => selectTemplate(named, db.select(named).from(plants).where(eq(plants.ownerId, sql.placeholder("ownerId"))).orderBy(plants.id));

describe("a Batch", () => {
  it("binds each template's placeholders per call, names each result by its slot and each value by its field", async () => {
    const insert = insertPlant();
    const batch = new Batch();
    const first = batch.add(bind(insert, { id: 1, ownerId: "usr_a", name: "fern" }, firstRow((row) => row.name as string)));
    batch.add(bind(insert, { id: 2, ownerId: "usr_a", name: "moss" }));
    const names = batch.add(bind(namesOf(), { ownerId: "usr_a" }, eachRow((row) => row.name as string)));
    const none = batch.add(selectStep(named, db.select(named).from(plants).where(eq(plants.ownerId, "usr_nobody")), firstRow((row) => row.name)));
    const results = await batch.run(db);
    expect(results(first)).toBe("fern");
    // Each statement sees the writes of those before it.
    expect(results(names)).toEqual(["fern", "moss"]);
    expect(results(none)).toBeUndefined();
  });

  it("keeps nothing when one of its statements fails", async () => {
    const insert = insertPlant();
    const batch = new Batch();
    batch.add(bind(insert, { id: 1, ownerId: "usr_a", name: "fern" }));
    batch.add(bind(insert, { id: 1, ownerId: "usr_a", name: "the same id again" }));
    await expect(batch.run(db)).rejects.toMatchObject({ code: "SQLITE_CONSTRAINT" });
    expect(await db.select().from(plants)).toEqual([]);
  });

  it("says which placeholder has no value", () => {
    expect(() => bind(insertPlant(), { id: 1, ownerId: "usr_a" })).toThrow(/No value for placeholder "name"/);
  });
});
