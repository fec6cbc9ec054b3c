import { describe, expect, it } from "vitest";
import { randomId, timeOrderedId } from "../src/platform/encoding";
import { startFakeUpstream } from "./support/fake-upstream";
import { createHarness } from "./support/harness";

describe("time-ordered ids", () => {
  it("look like random ids and sort, as text, by the time they were made", () => {
    const times = [0, 1, 63, 64, 1_700_000_000_000, 1_700_000_000_001, Date.UTC(2026, 10, 23), 2 ** 48 - 1];
    const ids = times.map((t) => timeOrderedId("msg", t));
    for (const id of ids) expect(id).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(randomId("msg")).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    // SQLite's BINARY collation compares bytes, as this sort does.
    expect([...ids].reverse().sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1))).toEqual(ids);
  });

  it("differ within one millisecond", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => timeOrderedId("use", 1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
  });

  it("are what a stored exchange's messages carry", async () => {
    const up = await startFakeUpstream();
    const h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl } });
    try {
      const token = await h.signIn("ida");
      // The part of an id that says when: "msg_" and 8 characters of time.
      const when = (id: string) => id.slice(0, 12);
      const from = when(timeOrderedId("msg", Date.now()));
      const sent = (await (await h.request("/chat/send", { method: "POST", token, json: { message: "hello" } })).json()) as { contextId: string };
      const to = when(timeOrderedId("msg", Date.now()));
      const context = (await (await h.request(`/contexts/${sent.contextId}`, { token })).json()) as { messages: Array<{ id: string }> };
      expect(context.messages).toHaveLength(2);
      // A random id would land in this window of a few milliseconds about once in 2^40 tries.
      for (const { id } of context.messages) expect(when(id) >= from && when(id) <= to).toBe(true);
    } finally {
      await h.close();
      await up.close();
    }
  });
});
