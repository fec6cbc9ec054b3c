import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cutNote } from "../src/features/chat/reply-cap";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse } from "./support/sse";

// Replies are capped when stored (issue 24): a 9 MB reply used to be stored whole and hang the
// tab that showed it. Past MAX_REPLY_CHARS the rest is cut, with a note in the reply saying
// so, the model's call is ended there, and the message is charged once.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, MAX_REPLY_CHARS: "1000" } });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
});

const stored = async (token: string, contextId: string) =>
  ((await (await h.request(`/contexts/${contextId}`, { token })).json()) as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!.content;
const used = async (token: string) => ((await (await h.request("/credits", { token })).json()) as { used: number }).used;

describe("MAX_REPLY_CHARS", () => {
  it("cuts a streamed reply at the cap with a visible note, stops the model there, and charges it once", async () => {
    const token = await h.signIn("cap-stream");
    // Two pieces of 600 characters, then the model would go on without end.
    up.reply = () => `${"a".repeat(599)} ${"b".repeat(599)} never`;
    up.mode = "stall-mid-stream";
    const cancelled = up.cancelled();
    const res = await h.request("/chat/send", { method: "POST", token, json: { message: "write a lot", stream: true } });
    const events = parseSse(await res.text());
    const text = events.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta?: string }).delta ?? "").join("");
    const expected = `${"a".repeat(599)} ${"b".repeat(400)}${cutNote(1000)}`;
    expect(text).toBe(expected);
    const done = JSON.parse(events.find((e) => e.event === "done")!.data) as { contextId: string };
    expect(await stored(token, done.contextId)).toBe(expected);
    expect(await used(token)).toBe(1);
    expect(cutNote(1000)).toBe("\n\n[This reply was cut here: it reached the longest reply this service keeps, 1,000 characters.]");
    // The model's call was ended there, not left streaming.
    await expect.poll(() => up.cancelled()).toBeGreaterThan(cancelled);
  });

  it("cuts a whole (unstreamed) reply the same way, counting characters as code points", async () => {
    const token = await h.signIn("cap-whole");
    up.reply = () => "🌿".repeat(1500);
    const res = await h.request("/chat/send", { method: "POST", token, json: { message: "ferns" } });
    const body = (await res.json()) as { response: string; contextId: string };
    expect(body.response).toBe(`${"🌿".repeat(1000)}${cutNote(1000)}`);
    expect(await stored(token, body.contextId)).toBe(body.response);
    expect(await used(token)).toBe(1);
  });

  it("leaves a reply within the cap as it is", async () => {
    const token = await h.signIn("cap-short");
    up.reply = () => "x".repeat(1000);
    const body = (await (await h.request("/chat/send", { method: "POST", token, json: { message: "short" } })).json()) as { response: string };
    expect(body.response).toBe("x".repeat(1000));
  });
});
