import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";

// Imported dates (issue 24). The attack: a ChatGPT conversations.json with create_time 1e13 or
// 1e306 answered 500; one message at 8.7e12 (seconds) was imported, and then the context, its
// share, the export and search answered 500 until it was deleted. Now a file's times are
// checked whole (2000 to a century ahead) and a bad one is 400 import_invalid naming where
// it is; and contexts that already hold such times still read.

let h: Harness;
let token: string;
beforeAll(async () => {
  h = await createHarness();
  token = await h.signIn("importer");
});
afterAll(() => h.close());

/** A ChatGPT conversation: a question and its answer, times in seconds. */
function conversation(times: { create?: unknown; update?: unknown; message?: unknown } = {}) {
  const message = (id: string, role: string, text: string, createTime: unknown) => ({
    id,
    author: { role },
    create_time: createTime,
    content: { content_type: "text", parts: [text] },
  });
  return {
    title: "Dates",
    create_time: times.create ?? 1_763_800_000,
    update_time: times.update ?? 1_763_800_900,
    mapping: {
      root: { id: "root", message: null, parent: null, children: ["q"] },
      q: { id: "q", message: message("q", "user", "when do I water the fern", 1_763_800_100), parent: "root", children: ["a"] },
      a: { id: "a", message: message("a", "assistant", "every week, fern lover", times.message ?? 1_763_800_200), parent: "q", children: [] },
    },
    current_node: "a",
  };
}

const importJson = (body: unknown) => h.request("/contexts/import", { method: "POST", token, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
const contextCount = async () => ((await (await h.request("/contexts?limit=100", { token })).json()) as { items: unknown[] }).items.length;

describe("an import's times", () => {
  it.each([
    ["a conversation's create_time of 1e13 (milliseconds taken for seconds)", conversation({ create: 1e13 }), /^cannot import this file: \[0\]\.create_time: must be a time between 2000-01-01 and 21\d\d-\d\d-\d\d \(in seconds since 1970, or null\); nothing was imported$/],
    ["a create_time of 1e306", conversation({ create: 1e306 }), /\[0\]\.create_time: must be a time between/],
    ["a message's create_time of 8.7e12", conversation({ message: 8.7e12 }), /\[0\]\.mapping\.a\.message\.create_time: must be a time between/],
    ["an update_time before 2000", conversation({ update: 946_684_799 }), /\[0\]\.update_time: must be a time between 2000-01-01/],
    ["a negative time", conversation({ message: -1 }), /\[0\]\.mapping\.a\.message\.create_time/],
  ])("refuses %s with 400 import_invalid naming the field, and imports nothing", async (_label, file, message) => {
    const before = await contextCount();
    await expectError(await importJson([conversation(), file]), 400, new RegExp(message.source.replace("\\[0\\]", "\\[1\\]")), "import_invalid");
    expect(await contextCount()).toBe(before);
  });

  it("refuses this service's export with a time out of range, naming it", async () => {
    const file = {
      format: "plant-chat-export",
      version: 1,
      contexts: [{ name: "Old", createdAt: "2026-11-01T00:00:00.000Z", messages: [{ id: "m1", role: "user", content: "hi", createdAt: "1999-12-31T23:59:59.000Z" }] }],
    };
    await expectError(await importJson(file), 400, /contexts\[0\]\.messages\[0\]\.createdAt: must be a time between 2000-01-01 and .* \(an ISO 8601 time such as 2026-11-22T12:00:00\.000Z\)/, "import_invalid");
    file.contexts[0]!.messages[0]!.createdAt = "+275760-09-13T00:00:00.000Z";
    await expectError(await importJson(file), 400, /contexts\[0\]\.messages\[0\]\.createdAt: must be a time between/, "import_invalid");
  });
});

describe("a context that already holds times a date cannot show", () => {
  it("reads, shares, exports and searches without error", async () => {
    const res = await importJson([conversation()]);
    expect(res.status).toBe(201);
    const { items } = (await res.json()) as { items: Array<{ id: string }> };
    const id = items[0]!.id;
    // As files imported before the check left them (ChatGPT's seconds read as such, then
    // multiplied again): past what a Date holds (8.7e15 ms), and the year 11476.
    await h.db.run(sql`update messages set created_at = case role when 'assistant' then ${8.7e15} else ${3e14} end where context_id = ${id}`);
    await h.db.run(sql`update contexts set created_at = ${8.7e15} where id = ${id}`);

    const context = await h.request(`/contexts/${id}`, { token });
    expect(context.status).toBe(200);
    const read = (await context.json()) as { createdAt: string; messages: Array<{ createdAt: string }> };
    expect(read.createdAt).toBe("9999-12-31T23:59:59.999Z");
    expect(read.messages.map((m) => m.createdAt)).toEqual(["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"]);
    expect((await h.request("/contexts", { token })).status).toBe(200);

    const share = await h.request(`/contexts/${id}/share`, { method: "POST", token });
    expect(share.status).toBe(201);
    const shared = await h.request(`/shared/${((await share.json()) as { token: string }).token}`);
    expect(shared.status).toBe(200);

    expect((await h.request("/me/export", { token })).status).toBe(200);
    expect((await h.request(`/contexts/${id}/export?format=markdown`, { token })).status).toBe(200);
    const search = await h.request("/contexts/search?q=fern", { token });
    expect(search.status).toBe(200);
    expect(((await search.json()) as { items: unknown[] }).items.length).toBeGreaterThan(0);
  });
});
