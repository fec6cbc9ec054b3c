import OpenAI, { APIError, AuthenticationError, BadRequestError, InternalServerError, NotFoundError, RateLimitError } from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream, type RecordedRequest } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse } from "./support/sse";

// The official `openai` package, unmodified, is the client: if it raises the right typed
// errors and parses every reply and stream, so will the tools built on it.

let up: FakeUpstream;
let h: Harness;
let base: string;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({
    env: {
      SVC_MODEL_BASE_URL: up.baseUrl,
      DAILY_CREDITS: "3",
      MODEL_TIMEOUT_MS: "5000",
      ANTHROPIC_API_KEY: "anthropic-test-key",
      ANTHROPIC_BASE_URL: up.origin,
    },
  });
  base = await h.listen();
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.reply = (req) => `echo: ${req.body.messages.at(-1)?.content ?? ""}`;
});

/** A user with an API key, and an OpenAI client that uses the key. */
async function signUp(name: string) {
  const token = await h.signIn(name);
  const res = await h.request("/keys", { method: "POST", token, json: { name: "sdk" } });
  expect(res.status).toBe(201);
  const { key } = (await res.json()) as { key: string };
  return { token, key, client: new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 }) };
}

async function creditsUsed(token: string): Promise<number> {
  return ((await (await h.request("/credits", { token })).json()) as { used: number }).used;
}

/** The error a call rejects with (failing the test when it succeeds). */
async function rejection(call: Promise<unknown>): Promise<APIError> {
  const outcome = await call.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(APIError);
  return outcome as APIError;
}

type Sampled = RecordedRequest["body"] & { temperature?: number; top_p?: number; stop?: string[]; stop_sequences?: string[] };
const lastUpstreamBody = () => up.requests.at(-1)!.body as Sampled;

const hello = { model: "svc-70b", messages: [{ role: "user" as const, content: "How often should I water a fern?" }] };

describe("GET /v1/models", () => {
  it("lists the models this server can call, in OpenAI's list shape", async () => {
    const { client } = await signUp("models-list");
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids).toContain("svc-70b");
    expect(ids).toContain("claude-haiku-3.5");
    expect(ids).not.toContain("gpt-4o"); // no OpenAI key configured: not callable here
    for (const model of page.data) {
      expect(model).toEqual({ id: expect.any(String), object: "model", created: expect.any(Number), owned_by: expect.any(String) });
    }
    expect(page.data.find((m) => m.id === "svc-70b")!.owned_by).toBe("svc");
  });

  it("retrieves one model, and answers 404 model_not_found for an unknown or unavailable one", async () => {
    const { client } = await signUp("models-retrieve");
    expect(await client.models.retrieve("svc-70b")).toMatchObject({ id: "svc-70b", object: "model" });
    for (const id of ["no-such-model", "gpt-4o"]) {
      const err = await rejection(client.models.retrieve(id));
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err.code).toBe("model_not_found");
    }
  });

  it("requires an API key", async () => {
    const client = new OpenAI({ apiKey: "sk_not-a-real-key", baseURL: `${base}/v1`, maxRetries: 0 });
    expect(await rejection(client.models.list())).toBeInstanceOf(AuthenticationError);
  });
});

describe("POST /v1/chat/completions", () => {
  it("answers a completion in OpenAI's shape, charging one credit, with the credit headers", async () => {
    const { client, token } = await signUp("completion");
    const { data, response } = await client.chat.completions.create(hello).withResponse();
    expect(data).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: "chat.completion",
      created: Math.floor(h.clock.now().getTime() / 1000),
      model: "svc-70b",
      choices: [
        { index: 0, message: { role: "assistant", content: "echo: How often should I water a fern?", refusal: null }, logprobs: null, finish_reason: "stop" },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, // the upstream's own count
    });
    expect(response.headers.get("x-credits-remaining")).toBe("2");
    expect(response.headers.get("x-credits-reset")).toBe("2026-11-23T00:00:00.000Z");
    expect(await creditsUsed(token)).toBe(1);
    expect(lastUpstreamBody()).toMatchObject({ model: "llama-3.3-70b", stream: false, messages: hello.messages });
  });

  it("streams a completion as chat.completion.chunk events ending in data: [DONE]", async () => {
    const { client, token } = await signUp("stream");
    up.reply = () => "Once a week, more in summer.";
    const stream = await client.chat.completions.create({ ...hello, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Once a week, more in summer.");
    expect(chunks.length).toBeGreaterThan(4); // the upstream's pieces are relayed as they come
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === "svc-70b")).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const withChoice = chunks.filter((c) => c.choices.length > 0);
    expect(withChoice.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(withChoice.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null)).toBe(true);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    expect(await creditsUsed(token)).toBe(1);
    expect(lastUpstreamBody().stream).toBe(true);
  });

  it("ends the raw event stream with data: [DONE] and carries the credit headers", async () => {
    const { key, token } = await signUp("stream-raw");
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...hello, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-credits-remaining")).toBe("2");
    const text = await res.text();
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    const events = parseSse(text);
    expect(events.slice(0, -1).every((e) => JSON.parse(e.data).usage === undefined)).toBe(true); // no usage unless asked
    expect(await creditsUsed(token)).toBe(1);
  });

  it("passes a multi-turn conversation with its system message, and the sampling settings, to the upstream intact", async () => {
    const { client } = await signUp("multi-turn");
    const messages = [
      { role: "system" as const, content: "You are a terse gardener." },
      { role: "user" as const, content: "My fern is brown." },
      { role: "assistant" as const, content: "Too little water, or too much sun." },
      { role: "user" as const, content: "It sits by the window." },
    ];
    const reply = await client.chat.completions.create({ model: "svc-70b", messages, temperature: 0.2, top_p: 0.9, max_tokens: 64, stop: "END" });
    expect(reply.choices[0]!.message.content).toBe("echo: It sits by the window.");
    const sent = lastUpstreamBody();
    expect(sent.messages).toEqual(messages);
    expect(sent).toMatchObject({ temperature: 0.2, top_p: 0.9, max_tokens: 64, stop: ["END"] });

    // `developer` is the newer name of the system role; max_completion_tokens wins over max_tokens.
    await client.chat.completions.create({
      model: "svc-70b",
      messages: [{ role: "developer", content: "Answer in French." }, { role: "user", content: [{ type: "text", text: "Hello" }] }],
      max_tokens: 10,
      max_completion_tokens: 20,
      temperature: 1,
    });
    expect(lastUpstreamBody().messages).toEqual([{ role: "system", content: "Answer in French." }, { role: "user", content: "Hello" }]);
    expect(lastUpstreamBody()).toMatchObject({ max_tokens: 20, temperature: 1 });
  });

  it("takes null for an optional setting as its default, as OpenAI does, and documents that", async () => {
    const { client } = await signUp("nulls");
    const nulls = { temperature: null, top_p: null, max_tokens: null, max_completion_tokens: null, n: null, stop: null };
    const reply = await client.chat.completions.create({ ...hello, ...nulls });
    expect(reply.choices[0]!.message.content).toBe("echo: How often should I water a fern?");
    const sent = lastUpstreamBody();
    for (const name of ["temperature", "top_p", "max_tokens", "stop"]) expect(sent, name).not.toHaveProperty(name);

    // A null max_completion_tokens leaves max_tokens in force.
    await client.chat.completions.create({ ...hello, max_completion_tokens: null, max_tokens: 12 });
    expect(lastUpstreamBody()).toMatchObject({ max_tokens: 12 });

    const doc = (await (await h.request("/openapi.json")).json()) as { components: { schemas: Record<string, { properties: Record<string, { type: unknown }> }> } };
    const fields = doc.components.schemas.ChatCompletionRequest!.properties;
    expect(Object.fromEntries(Object.keys(nulls).filter((k) => k !== "stop").map((k) => [k, fields[k]!.type]))).toEqual({
      temperature: ["number", "null"],
      top_p: ["number", "null"],
      max_tokens: ["integer", "null"],
      max_completion_tokens: ["integer", "null"],
      n: ["integer", "null"],
    });
  });

  it("hands an Anthropic model the system prompt apart, the request's max_tokens and a temperature on its scale", async () => {
    const { client } = await signUp("anthropic");
    const reply = await client.chat.completions.create({
      model: "claude-haiku-3.5",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Name a fern." }],
      max_completion_tokens: 100,
      temperature: 1.5,
      stop: ["\n\n", "END"],
    });
    expect(reply.choices[0]!.message.content).toBe("echo: Name a fern.");
    expect(reply.model).toBe("claude-haiku-3.5");
    const sent = lastUpstreamBody();
    expect(up.requests.at(-1)!.path).toBe("/v1/messages");
    expect(sent).toMatchObject({ system: "Be brief.", max_tokens: 100, temperature: 1, stop_sequences: ["END"] });
    expect(sent.messages).toEqual([{ role: "user", content: "Name a fern." }]);
  });

  it("answers an unknown model with 404 model_not_found, naming the available ones, and charges nothing", async () => {
    const { client, token } = await signUp("bad-model");
    const err = await rejection(client.chat.completions.create({ ...hello, model: "gpt-7" }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.status).toBe(404);
    expect(err.code).toBe("model_not_found");
    expect(err.param).toBe("model");
    expect(err.type).toBe("not_found_error");
    expect(err.message).toMatch(/gpt-7.*svc-70b/);
    expect(err.requestID).toMatch(/\S/); // X-Request-Id, for reporting
    expect(await creditsUsed(token)).toBe(0);
  });

  it("quotes an unknown model and an unknown context as short printable excerpts", async () => {
    const { client, token } = await signUp("quotes");
    const model = await rejection(client.chat.completions.create({ ...hello, model: `g\u0001${"p".repeat(198)}` }));
    expect(model.status).toBe(404);
    expect(model.error).toMatchObject({ message: expect.stringMatching(new RegExp(`^model 'g\\\\u0001${"p".repeat(58)}…' does not exist; available models: svc-70b`)) });
    const retrieved = await rejection(client.models.retrieve(`x\u001b${"y".repeat(9_999)}`));
    expect(retrieved.status).toBe(404);
    expect((retrieved.error as { message: string }).message).toMatch(new RegExp(`^model 'x\\\\u001b${"y".repeat(58)}…' does not exist`));
    const context = await rejection(
      client.chat.completions.create({ ...hello, context_id: `ctx\u0002${"c".repeat(96)}` } as OpenAI.ChatCompletionCreateParamsNonStreaming),
    );
    expect(context.code).toBe("context_not_found");
    expect((context.error as { message: string }).message).toBe(`context ctx\\u0002${"c".repeat(56)}… not found`);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("answers a model that is not configured here with 503, told not to retry, and charges nothing", async () => {
    const { client, token } = await signUp("unconfigured");
    const err = await rejection(client.chat.completions.create({ ...hello, model: "gpt-4o" }));
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err.status).toBe(503);
    expect(err.code).toBe("model_not_available");
    expect(err.headers?.get("x-should-retry")).toBe("false");
    expect(await creditsUsed(token)).toBe(0);
  });

  it("refuses a bad or missing API key with 401 in OpenAI's shape", async () => {
    const client = new OpenAI({ apiKey: "sk_this-key-does-not-exist", baseURL: `${base}/v1`, maxRetries: 0 });
    const err = await rejection(client.chat.completions.create(hello));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err.type).toBe("authentication_error");
    expect(err.code).toBe("invalid_api_key");
    expect(err.message).toMatch(/invalid or has been revoked/);
    expect(err.headers?.get("www-authenticate")).toMatch(/^Bearer/);

    const res = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(hello) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      error: { message: expect.stringMatching(/authentication required/), type: "authentication_error", param: null, code: "invalid_api_key" },
    });
  });

  it("takes the API key in X-API-Key too, and an identity-provider access token as the Bearer", async () => {
    const { key, token } = await signUp("other-credentials");
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(hello),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as OpenAI.ChatCompletion).choices[0]!.message.content).toBe("echo: How often should I water a fern?");

    const withToken = new OpenAI({ apiKey: token, baseURL: `${base}/v1`, maxRetries: 0 });
    expect((await withToken.chat.completions.create(hello)).object).toBe("chat.completion");
    expect(await creditsUsed(token)).toBe(2);
  });

  it("answers 402 insufficient_quota with Retry-After once the day's credits are used, and does not call the model", async () => {
    const { client, token } = await signUp("exhausted");
    for (let i = 0; i < 3; i++) await client.chat.completions.create(hello);
    const calls = up.requests.length;
    const err = await rejection(client.chat.completions.create(hello));
    expect(err.status).toBe(402);
    expect(err).not.toBeInstanceOf(RateLimitError); // the SDK does not retry a 402
    expect(err.code).toBe("insufficient_quota");
    expect(err.type).toBe("insufficient_quota");
    expect(err.message).toMatch(/insufficient credits.*00:00 UTC/);
    expect(err.headers?.get("retry-after")).toBe(String(12 * 3600));
    expect(err.headers?.get("x-credits-remaining")).toBe("0");
    expect(up.requests.length).toBe(calls);
    expect(await creditsUsed(token)).toBe(3);
  });

  it("refunds the credit when the upstream fails, without showing the upstream's reply", async () => {
    const { client, token } = await signUp("upstream-fails");
    up.mode = "fail";
    const err = await rejection(client.chat.completions.create(hello));
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err.status).toBe(502);
    expect(err.type).toBe("api_error");
    expect(err.code).toBe("upstream_error");
    expect(err.message).not.toContain(up.secretInErrors);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("refunds the credit when a stream breaks off, and the SDK raises the error it is sent", async () => {
    const { client, token } = await signUp("stream-breaks");
    up.reply = () => "one two three four five";
    up.mode = "fail-mid-stream";
    const stream = await client.chat.completions.create({ ...hello, stream: true });
    let text = "";
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).message).toMatch(/failed to answer; nothing was charged/);
    expect((err as APIError).code).toBe("upstream_error");
    expect(text).toBe("one two ");
    expect(await creditsUsed(token)).toBe(0);
  });

  it("refuses what it cannot honour with 400 naming the param, and charges nothing", async () => {
    const { client, token } = await signUp("refusals");
    const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object" } } };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ n: 2 }, "n"],
      [{ temperature: 3 }, "temperature"],
      [{ logprobs: true }, "logprobs"],
      [{ response_format: { type: "xml" } }, "response_format.type"],
      [{ response_format: { type: "json_schema", json_schema: { name: "a plant!" } } }, "response_format.json_schema.name"],
      [{ functions: [{ name: "water", parameters: {} }] }, "functions"],
      [{ tools: [weather], tool_choice: { type: "function", function: { name: "water" } } }, "tool_choice.function.name"],
      [{ tool_choice: "required" }, "tool_choice"],
      [{ tools: [weather, weather] }, "tools[1].function.name"],
      [{ tools: [{ type: "retrieval" }] }, "tools[0].type"],
      [{ modalities: ["text", "audio"] }, "modalities[1]"],
      [{ messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }, "messages[0].content[0].type"],
      [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "file:///etc/passwd" } }] }] }, "messages[0].content[0].image_url.url"],
      [{ messages: [{ role: "user", content: "hi" }, { role: "tool", content: "42", tool_call_id: "call_1" }] }, "messages[1].tool_call_id"],
      [{ messages: [{ role: "function", content: "42", name: "f" }] }, "messages[0].role"],
      [{ messages: [{ role: "system", content: "Only a system message." }] }, "messages"],
      [{ messages: [] }, "messages"],
      // svc-70b here takes no images: a 400 naming the model.
      [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/fern.png" } }] }] }, "messages[0].content"],
    ];
    for (const [change, param] of cases) {
      const err = await rejection(client.chat.completions.create({ ...hello, ...change } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming));
      expect(err, param).toBeInstanceOf(BadRequestError);
      expect(err.type).toBe("invalid_request_error");
      expect(err.param, JSON.stringify(change)).toBe(param);
      if (param === "messages[0].content") {
        expect((err.error as { message: string }).message).toBe(
          "model svc-70b does not take images; send text only, or choose a model with images: true in GET /models",
        );
      }
    }
    const noModel = await rejection(client.chat.completions.create({ messages: hello.messages } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming));
    expect(noModel.param).toBe("model");
    expect(noModel.message).toMatch(/model: is required/);
    expect(await creditsUsed(token)).toBe(0);
  });

  it("ignores the fields it does not use", async () => {
    const { client } = await signUp("ignored");
    const reply = await client.chat.completions.create({
      ...hello,
      user: "someone",
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: 0.5,
      metadata: { app: "test" },
      n: 1,
      tool_choice: "none",
      response_format: { type: "text" },
    });
    expect(reply.choices[0]!.message.content).toBe("echo: How often should I water a fern?");
    expect(lastUpstreamBody()).not.toHaveProperty("seed");
  });

  it("replays a repeated Idempotency-Key without a second charge or model call", async () => {
    const { client, token } = await signUp("idempotent");
    const first = await client.chat.completions.create(hello, { headers: { "Idempotency-Key": "retry-1" } });
    const calls = up.requests.length;
    const { data: again, response } = await client.chat.completions.create(hello, { headers: { "Idempotency-Key": "retry-1" } }).withResponse();
    expect(again).toEqual(first);
    expect(response.headers.get("idempotent-replayed")).toBe("true");
    expect(up.requests.length).toBe(calls);
    expect(await creditsUsed(token)).toBe(1);

    const err = await rejection(client.chat.completions.create({ ...hello, temperature: 0.1 }, { headers: { "Idempotency-Key": "retry-1" } }));
    expect(err.status).toBe(422);
    expect(err.code).toBe("idempotency_key_reused");
  });
});

describe("context_id", () => {
  it("continues a stored context: its history reaches the model after the system message, and the exchange is stored", async () => {
    const { client, token } = await signUp("context");
    const started = await h.request("/chat/send", { method: "POST", token, json: { message: "My fern is brown." } });
    const { contextId } = (await started.json()) as { contextId: string };

    const reply = await client.chat.completions.create({
      model: "svc-70b",
      messages: [
        { role: "system", content: "You are a terse gardener." },
        { role: "user", content: "An earlier turn the server replaces with the stored history." },
        { role: "user", content: "It sits by the window." },
      ],
      context_id: contextId,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(reply.choices[0]!.message.content).toBe("echo: It sits by the window.");
    expect((reply as unknown as { context_id: string }).context_id).toBe(contextId);
    expect(lastUpstreamBody().messages).toEqual([
      { role: "system", content: "You are a terse gardener." },
      { role: "user", content: "My fern is brown." },
      { role: "assistant", content: "echo: My fern is brown." },
      { role: "user", content: "It sits by the window." },
    ]);

    const stored = (await (await h.request(`/contexts/${contextId}`, { token })).json()) as { messages: Array<{ role: string; content: string; model?: string }> };
    expect(stored.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "My fern is brown."],
      ["assistant", "echo: My fern is brown."],
      ["user", "It sits by the window."],
      ["assistant", "echo: It sits by the window."],
    ]);
    expect(await creditsUsed(token)).toBe(2);
  });

  it("answers another user's context with 404 context_not_found and charges nothing", async () => {
    const owner = await signUp("context-owner");
    const started = await h.request("/chat/send", { method: "POST", token: owner.token, json: { message: "Mine." } });
    const { contextId } = (await started.json()) as { contextId: string };

    const { client, token } = await signUp("context-intruder");
    const err = await rejection(client.chat.completions.create({ ...hello, context_id: contextId } as OpenAI.ChatCompletionCreateParamsNonStreaming));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.code).toBe("context_not_found");
    expect(err.param).toBe("context_id");
    expect(await creditsUsed(token)).toBe(0);
  });

  it("requires the last message to be the user's new message", async () => {
    const { client } = await signUp("context-last");
    const err = await rejection(
      client.chat.completions.create({
        model: "svc-70b",
        messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }],
        context_id: "ctx_whatever",
      } as OpenAI.ChatCompletionCreateParamsNonStreaming),
    );
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.param).toBe("messages[1].role");
  });
});

describe("the /v1 error shape", () => {
  it.each([
    ["without context_id", {}],
    ["with context_id", { context_id: "ctx_any" }],
  ])("answers an empty messages list %s with a 400 in OpenAI's shape, charging nothing", async (_label, extra) => {
    const { key, token } = await signUp(`empty-messages-${Object.keys(extra).length}`);
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc-70b", messages: [], ...extra }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { message: expect.stringMatching(/messages: must hold at least one message/), type: "invalid_request_error", param: "messages", code: null },
    });
    expect(await creditsUsed(token)).toBe(0);
  });

  it("answers unknown /v1 paths and malformed JSON in OpenAI's shape, while other paths keep { error, message }", async () => {
    const { key } = await signUp("shapes");
    const unknown = await fetch(`${base}/v1/embeddings`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { message: expect.stringMatching(/no such endpoint: POST \/v1\/embeddings/), type: "not_found_error", param: null, code: "unknown_url" },
    });

    const malformed = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: '{"model": "svc-70b",',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { type: string; message: string } }).error).toMatchObject({
      type: "invalid_request_error",
      message: expect.stringMatching(/not valid JSON/),
    });

    const elsewhere = await fetch(`${base}/nope`);
    expect(await elsewhere.json()).toEqual({ error: 404, message: "no such endpoint: GET /nope", code: "not_found" });
    const chat = await fetch(`${base}/chat/send`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(((await chat.json()) as { error: number }).error).toBe(401);
  });

  it("lists the /v1 operations in the OpenAPI document", async () => {
    const doc = (await (await h.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths["/v1/chat/completions"]!)).toEqual(["post"]);
    expect(doc.paths["/v1/models"]).toHaveProperty("get");
    expect(doc.paths["/v1/models/{model}"]).toHaveProperty("get");
  });

  it("documents what the completions route enforces and answers: n and max_tokens bounds, required content, event streams, 429 and 500", async () => {
    type Schema = { properties: Record<string, { minimum?: number; maximum?: number }>; required: string[] };
    const doc = (await (await h.request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
      components: { schemas: Record<string, Schema> };
    };
    const request = doc.components.schemas.ChatCompletionRequest!;
    expect(request.properties.n).toMatchObject({ minimum: 1, maximum: 1 });
    expect(request.properties.max_tokens).toMatchObject({ minimum: 1 });
    expect(request.properties.max_completion_tokens).toMatchObject({ minimum: 1 });
    expect(doc.components.schemas.ChatCompletionMessage!.required).toEqual(expect.arrayContaining(["role", "content"]));
    const responses = doc.paths["/v1/chat/completions"]!.post!.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(["429", "500"]));
    expect(Object.keys(responses["200"]!.content!)).toEqual(["application/json", "text/event-stream"]);
    for (const path of ["/v1/models", "/v1/models/{model}"]) expect(Object.keys(doc.paths[path]!.get!.responses)).toEqual(expect.arrayContaining(["429", "500"]));
  });

  it("answers 400 naming the param for a message without content, as the document says", async () => {
    const { key } = await signUp("no-content");
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc-70b", messages: [{ role: "user" }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({
      param: "messages[0].content",
      message: expect.stringMatching(/is required/),
    });
  });
});
