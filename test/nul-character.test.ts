import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { parseSse } from "./support/sse";

// SQLite stores U+0000 inside TEXT, but the embedded libSQL binding reads such text back cut
// at the first NUL, and SQLite leaves functions over it (length, FTS5) undefined. Every
// string the service would store is therefore refused with a 400 naming its field, and
// nothing is acknowledged that would read back differently.

let up: FakeUpstream;
let h: Harness;
let alice: string;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, SVC_MODEL_API_KEY: "svc-test-key" } });
  alice = await h.signIn("alice");
});
afterAll(async () => {
  await h.close();
  await up.close();
});

const NUL_MESSAGE = /must not contain the NUL character \(U\+0000\)/;

async function expectNulRefused(res: Response, field: string) {
  const body = await expectError(res, 400, NUL_MESSAGE);
  expect(body.message.startsWith(`${field}: `)).toBe(true);
}

describe("a string with U+0000", () => {
  it("is refused for a plant's name and tag, naming the field, and nothing is stored", async () => {
    const post = (json: unknown) => h.request("/plants", { method: "POST", token: alice, json });
    await expectNulRefused(await post({ id: 7, name: "before\u0000after" }), "name");
    await expectNulRefused(await post({ id: 8, name: "\u0000abc" }), "name");
    await expectNulRefused(await post({ id: 9, name: "fern", tag: "a\u0000" }), "tag");
    const list = (await (await h.request("/plants", { token: alice })).json()) as unknown[];
    expect(list).toEqual([]);
  });

  it("is refused for a chat message, with no charge and no context created", async () => {
    const res = await h.request("/chat/send", { method: "POST", token: alice, json: { message: "hello\u0000world" } });
    await expectNulRefused(res, "message");
    expect(up.requests).toHaveLength(0);
    const credits = (await (await h.request("/credits", { token: alice })).json()) as { used: number };
    expect(credits.used).toBe(0);
    const contexts = (await (await h.request("/contexts", { token: alice })).json()) as { items: unknown[] };
    expect(contexts.items).toEqual([]);
  });

  it("is refused for a message of the OpenAI-compatible surface, in OpenAI's error shape", async () => {
    const res = await h.request("/v1/chat/completions", {
      method: "POST",
      token: alice,
      json: { model: "svc-70b", messages: [{ role: "user", content: "hi" }, { role: "user", content: "x\u0000y" }] },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/^messages\[1\]\.content: must not contain the NUL character/);
    expect(up.requests).toHaveLength(0);
  });

  it("is refused for context and group names, on create and rename", async () => {
    await expectNulRefused(await h.request("/contexts", { method: "POST", token: alice, json: { name: "a\u0000b" } }), "name");
    await expectNulRefused(await h.request("/groups", { method: "POST", token: alice, json: { name: "a\u0000b" } }), "name");

    const context = (await (await h.request("/contexts", { method: "POST", token: alice, json: { name: "plain" } })).json()) as { id: string };
    await expectNulRefused(
      await h.request(`/contexts/${context.id}`, { method: "PATCH", token: alice, json: { name: "re\u0000named" } }),
      "name",
    );
    const group = (await (await h.request("/groups", { method: "POST", token: alice, json: { name: "plain" } })).json()) as { id: string };
    await expectNulRefused(await h.request(`/groups/${group.id}`, { method: "PATCH", token: alice, json: { name: "\u0000" } }), "name");

    const read = (await (await h.request(`/contexts/${context.id}`, { token: alice })).json()) as { name: string };
    expect(read.name).toBe("plain");
    const groups = (await (await h.request("/groups", { token: alice })).json()) as { items: Array<{ name: string }> };
    expect(groups.items.map((g) => g.name)).toEqual(["plain"]);
  });

  it("is refused for the profile's name and preferences, and for an API key's name", async () => {
    await expectNulRefused(await h.request("/me", { method: "PATCH", token: alice, json: { name: "Al\u0000ice" } }), "name");
    await expectNulRefused(
      await h.request("/me", { method: "PATCH", token: alice, json: { preferences: { language: "en\u0000" } } }),
      "preferences.language",
    );
    await expectNulRefused(await h.request("/keys", { method: "POST", token: alice, json: { name: "cli\u0000" } }), "name");
    const me = (await (await h.request("/me", { token: alice })).json()) as { name: string };
    expect(me.name).toBe("alice");
    const keys = (await (await h.request("/keys", { token: alice })).json()) as unknown[];
    expect(keys).toEqual([]);
  });

  it("is refused in an object key, naming where the key is", async () => {
    const res = await h.request("/me", { method: "PATCH", token: alice, json: { preferences: { "the\u0000me": "dark" } } });
    await expectNulRefused(res, "preferences");
  });

  it("names a long or unusual key on the way as a short printable excerpt", async () => {
    const long = await h.request("/me", { method: "PATCH", token: alice, json: { preferences: { ["k".repeat(10_000)]: "a\u0000" } } });
    await expectNulRefused(long, `preferences.${"k".repeat(60)}…`);
    const odd = await h.request("/me", { method: "PATCH", token: alice, json: { 'say "hi"\u0001': "a\u0000" } });
    await expectNulRefused(odd, '"say \\"hi\\"\\u0001"');
  });

  it("names the field of a lone surrogate escape too", async () => {
    const res = await h.request("/plants", { method: "POST", token: alice, json: '{"id":10,"name":"ok","tag":"\\ud800"}' });
    const body = await expectError(res, 400, /surrogate/);
    expect(body.message.startsWith("tag: ")).toBe(true);
  });
});

describe("an access token with U+0000 in a claim", () => {
  it("is refused when the subject holds it, and a profile claim holding it is ignored", async () => {
    const badSub = await h.idp.sign("user:a\u0000b", { name: "ab" });
    await expectError(await h.request("/me", { token: badSub }), 401, /"sub" claim/);

    const token = await h.idp.sign("user:carol", { name: "Ca\u0000rol", email: "carol@example.com" });
    const me = await h.request("/me", { token });
    expect(me.status).toBe(200);
    const body = (await me.json()) as { name: string; identity: { email?: string } };
    expect(body.name).toBe("carol");
    expect(body.identity.email).toBe("carol@example.com");
  });
});

describe("text around U+0000's neighbours", () => {
  it("stores and returns exactly what was acknowledged, control characters included", async () => {
    const name = "tab\there\u0001\u001f line\nbreak \u{1F331} \u2028 end";
    const tag = "\u007f\u0085 é";
    const created = await h.request("/plants", { method: "POST", token: alice, json: { id: 11, name, tag } });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ name, tag });
    const list = (await (await h.request("/plants", { token: alice })).json()) as Array<{ name: string; tag: string }>;
    expect(list).toEqual([{ name, tag }]);

    const context = await h.request("/contexts", { method: "POST", token: alice, json: { name } });
    expect(context.status).toBe(201);
    const { id } = (await context.json()) as { id: string };
    expect(((await (await h.request(`/contexts/${id}`, { token: alice })).json()) as { name: string }).name).toBe(name);
  });
});

describe("a model reply with U+0000", () => {
  // What the model sends, and what the service passes on, streams, returns and stores:
  // every NUL replaced by U+FFFD, nothing cut, everything else as sent.
  const SENT = "\u0000Water\u0000it when the top inch is dry.\u0000 \u{1F331}\u0000";
  const PASSED_ON = "\uFFFDWater\uFFFDit when the top inch is dry.\uFFFD \u{1F331}\uFFFD";

  let bob: string;
  beforeAll(async () => {
    bob = await h.signIn("bob");
    up.reply = () => SENT;
  });
  afterAll(() => {
    up.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
  });

  /** The context's messages as GET /contexts/{id} returns them: what was stored. */
  async function stored(contextId: string) {
    const res = await h.request(`/contexts/${contextId}`, { token: bob });
    expect(res.status).toBe(200);
    return ((await res.json()) as { messages: Array<{ role: string; content: string }> }).messages.map((m) => [m.role, m.content]);
  }

  const streamedText = (text: string, pick: (data: any) => string | undefined) =>
    parseSse(text)
      .filter((e) => e.event === "message" && e.data !== "[DONE]")
      .map((e) => pick(JSON.parse(e.data)) ?? "")
      .join("");

  it("reaches the client of POST /chat/send with U+FFFD for each NUL, and is stored whole", async () => {
    const res = await h.request("/chat/send", { method: "POST", token: bob, json: { message: "When?" } });
    expect(res.status).toBe(200);
    const reply = (await res.json()) as { response: string; contextId: string };
    expect(reply.response).toBe(PASSED_ON);
    expect(await stored(reply.contextId)).toEqual([
      ["user", "When?"],
      ["assistant", PASSED_ON],
    ]);
  });

  it("is streamed by POST /chat/send with U+FFFD for each NUL, and is stored whole", async () => {
    const res = await h.request("/chat/send", { method: "POST", token: bob, json: { message: "When, streamed?", stream: true } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(streamedText(text, (d: { delta?: string }) => d.delta)).toBe(PASSED_ON);
    const done = parseSse(text).find((e) => e.event === "done")!;
    const { contextId } = JSON.parse(done.data) as { contextId: string };
    expect(await stored(contextId)).toEqual([
      ["user", "When, streamed?"],
      ["assistant", PASSED_ON],
    ]);
  });

  it("reaches the client of /v1/chat/completions with U+FFFD for each NUL, streamed or not, and a context stores it whole", async () => {
    const started = (await (await h.request("/contexts", { method: "POST", token: bob, json: { name: "v1" } })).json()) as { id: string };
    const complete = (json: object) => h.request("/v1/chat/completions", { method: "POST", token: bob, json: { model: "svc-70b", ...json } });

    const whole = await complete({ messages: [{ role: "user", content: "Whole?" }], context_id: started.id });
    expect(whole.status).toBe(200);
    expect(((await whole.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(PASSED_ON);

    const streamed = await complete({ messages: [{ role: "user", content: "Streamed?" }], context_id: started.id, stream: true });
    expect(streamed.status).toBe(200);
    const text = await streamed.text();
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(streamedText(text, (d: { choices: Array<{ delta: { content?: string } }> }) => d.choices[0]?.delta.content)).toBe(PASSED_ON);

    expect(await stored(started.id)).toEqual([
      ["user", "Whole?"],
      ["assistant", PASSED_ON],
      ["user", "Streamed?"],
      ["assistant", PASSED_ON],
    ]);

    // Without a context nothing is stored, and the client still gets the same text.
    const stateless = await complete({ messages: [{ role: "user", content: "Stateless?" }] });
    expect(((await stateless.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(PASSED_ON);
  });
});
