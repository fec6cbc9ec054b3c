import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// drizzle's migrator applies the migrations stamped later than the last one a database has
// applied (the journal's `when`), not those it lacks: a migration stamped earlier than the
// one before it would be skipped silently on every database already past that one.
describe("the migrations' journal", () => {
  it("stamps each migration later than the one before it", () => {
    const journal = JSON.parse(readFileSync(resolve(import.meta.dirname, "../migrations/meta/_journal.json"), "utf8")) as {
      entries: Array<{ idx: number; when: number; tag: string }>;
    };
    const out = journal.entries.filter((e, i) => i > 0 && e.when <= journal.entries[i - 1]!.when).map((e) => e.tag);
    expect(out).toEqual([]);
    expect(journal.entries.map((e) => e.idx)).toEqual(journal.entries.map((_, i) => i));
  });
});
