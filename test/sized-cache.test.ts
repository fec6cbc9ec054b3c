import { describe, expect, it } from "vitest";
import { SizedCache } from "../src/platform/sized-cache";

describe("SizedCache", () => {
  it("keeps the most recently used entries up to the total size, and none over the entry limit", () => {
    const cache = new SizedCache<string, string>(10, 6);
    cache.set("a", "A", 4);
    cache.set("b", "B", 4);
    expect(cache.get("a")).toBe("A"); // now the newest
    cache.set("c", "C", 4); // 12 > 10: the least recently used (b) goes
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual(["A", undefined, "C"]);
    expect(cache.totalSize).toBe(8);
    cache.set("d", "D", 7); // over the entry limit: not kept, and nothing evicted for it
    expect([cache.get("a"), cache.get("c"), cache.get("d")]).toEqual(["A", "C", undefined]);
    cache.set("a", "A2", 2); // replaced: its old size is given back
    expect(cache.totalSize).toBe(6);
    cache.delete("c");
    expect([cache.get("a"), cache.get("c"), cache.totalSize]).toEqual(["A2", undefined, 2]);
  });
});
