import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, tool } from "ai";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startFakeUpstream, type FakeUpstream, type RecordedRequest, type ToolReply } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse } from "./support/sse";

// Tool calling, JSON replies and images through /v1, driven by the clients agents use: the
// official `openai` SDK's tool runner and structured-output parser, and the Vercel AI SDK's
// generateText with tools. The upstream on loopback speaks OpenAI's protocol (svc-70b,
// gpt-4o-mini) and Anthropic's (claude-haiku-3.5), streamed and not.

let up: FakeUpstream;
let h: Harness;
let base: string;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({
    env: {
      SVC_MODEL_BASE_URL: up.baseUrl,
      OPENAI_BASE_URL: up.baseUrl,
      ANTHROPIC_API_KEY: "anthropic-test-key",
      ANTHROPIC_BASE_URL: up.origin,
      MODEL_CREDITS: "claude-haiku-3.5=2",
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
  up.reply = weatherModel;
});

/** The last message's role as either protocol sends it (Anthropic's tool results ride in a user turn). */
function lastIsToolResult(req: RecordedRequest): string | undefined {
  const last = req.body.messages.at(-1)!;
  if (last.role === "tool") return String(last.content);
  if (Array.isArray(last.content)) {
    const result = last.content.find((b: { type: string }) => b.type === "tool_result");
    if (result) return typeof result.content === "string" ? result.content : JSON.stringify(result.content);
  }
  return undefined;
}

/** A model that calls get_weather for Paris, then answers with what the tool returned. */
function weatherModel(req: RecordedRequest): string | ToolReply {
  const result = lastIsToolResult(req);
  if (result !== undefined) return `The weather in Paris: ${result}`;
  if (req.body.tools?.length) return { toolCalls: [{ name: "get_weather", input: { city: "Paris" } }] };
  return "no tools";
}

async function signUp(name: string) {
  const token = await h.signIn(name);
  const res = await h.request("/keys", { method: "POST", token, json: { name: "agent" } });
  const { key } = (await res.json()) as { key: string };
  return { token, key, client: new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 }) };
}

const used = async (token: string) => ((await (await h.request("/credits", { token })).json()) as { used: number }).used;

const weatherTool = {
  type: "function" as const,
  function: { name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};

describe("tools through /v1", () => {
  it.each(["svc-70b", "claude-haiku-3.5"])("runs the openai SDK's tool runner to the end with %s, each round trip one charged message", async (model) => {
    const { client, token } = await signUp(`runner-${model}`);
    const calls: string[] = [];
    const runner = client.chat.completions.runTools({
      model,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [
        zodFunction({
          name: "get_weather",
          description: "The weather in a city",
          parameters: z.object({ city: z.string() }),
          function: ({ city }) => {
            calls.push(city);
            return "sunny, 21 °C";
          },
        }),
      ],
    });
    expect(await runner.finalContent()).toBe("The weather in Paris: sunny, 21 °C");
    expect(calls).toEqual(["Paris"]);
    const price = model === "claude-haiku-3.5" ? 2 : 1;
    expect(await used(token)).toBe(2 * price);

    const [first, second] = up.requests.slice(-2);
    if (model === "svc-70b") {
      expect(first!.body.tools).toEqual([
        { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: expect.objectContaining({ type: "object" }), strict: true } },
      ]);
      expect(second!.body.messages.at(-2)).toMatchObject({ role: "assistant", tool_calls: [{ id: "call_0_get_weather", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] });
      expect(second!.body.messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_0_get_weather", content: "sunny, 21 °C" });
    } else {
      // Translated for the Messages API: tools with input_schema, tool_use and tool_result blocks.
      expect(first!.body.tools).toEqual([{ name: "get_weather", description: "The weather in a city", input_schema: expect.objectContaining({ type: "object" }) }]);
      expect(second!.body.messages).toEqual([
        { role: "user", content: "What is the weather in Paris?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_0_get_weather", name: "get_weather", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_0_get_weather", content: "sunny, 21 °C" }] },
      ]);
    }
  });

  it.each(["svc-70b", "claude-haiku-3.5"])("streams tool calls in OpenAI's chunk shape with %s, ending with finish_reason tool_calls", async (model) => {
    const { client } = await signUp(`stream-tools-${model}`);
    const runner = client.chat.completions.runTools({
      model,
      stream: true,
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "The weather in a city",
            parameters: { type: "object", properties: { city: { type: "string" } } },
            parse: (args: string) => JSON.parse(args) as { city: string },
            function: ({ city }: { city: string }) => `rain for ${city}`,
          },
        },
      ],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    runner.on("chunk", (c: OpenAI.Chat.Completions.ChatCompletionChunk) => void chunks.push(c));
    expect(await runner.finalContent()).toBe("The weather in Paris: rain for Paris");
    const toolChunks = chunks.filter((c) => c.choices[0]?.delta.tool_calls);
    expect(toolChunks.length).toBeGreaterThanOrEqual(3); // the call's start, then its arguments in pieces
    expect(toolChunks[0]!.choices[0]!.delta.tool_calls![0]).toMatchObject({ index: 0, id: expect.any(String), type: "function", function: { name: "get_weather" } });
    expect(toolChunks.map((c) => c.choices[0]!.delta.tool_calls![0]!.function?.arguments ?? "").join("")).toBe('{"city":"Paris"}');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "tool_calls")).toBe(true);
  });

  it("answers a non-streamed tool call with content null and finish_reason tool_calls", async () => {
    const { client } = await signUp("whole-tools");
    const reply = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Weather?" }],
      tools: [weatherTool],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
    });
    expect(reply.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: { role: "assistant", content: null, tool_calls: [{ id: "call_0_get_weather", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    });
    expect(up.requests.at(-1)!.body).toMatchObject({ tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false });
  });

  it("runs the Vercel AI SDK's generateText with tools over several steps", async () => {
    const { key, token } = await signUp("ai-sdk");
    const provider = createOpenAICompatible({ name: "plant-chat", baseURL: `${base}/v1`, apiKey: key });
    const result = await generateText({
      model: provider("svc-70b"),
      prompt: "What is the weather in Paris?",
      tools: {
        get_weather: tool({
          description: "The weather in a city",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => ({ city, forecast: "sunny" }),
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(result.text).toBe('The weather in Paris: {"city":"Paris","forecast":"sunny"}');
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.toolCalls.map((c) => [c.toolName, c.input])).toEqual([["get_weather", { city: "Paris" }]]);
    expect(result.steps[0]!.finishReason).toBe("tool-calls");
    expect(await used(token)).toBe(2);
  });

  it("refuses tools for a model that does not take them, naming it, and charges nothing", async () => {
    const { client, token } = await signUp("no-tools");
    const err = await client.chat.completions
      .create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], tools: [weatherTool] }, { maxRetries: 0 })
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeUndefined(); // gpt-4o-mini takes tools: accepted
    // A model of the built-in catalog without tools: svc-70b on Workers AI is text only, so use a MODELS harness.
    const own = await createHarness({ env: { MODELS: JSON.stringify([{ id: "plain", protocol: "openai", baseUrl: up.baseUrl }]) } });
    try {
      const t = await own.signIn("plain");
      const res = await own.request("/v1/chat/completions", { method: "POST", token: t, json: { model: "plain", messages: [{ role: "user", content: "hi" }], tools: [weatherTool] } });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: {
          message: "model plain does not take tools; send the request without tools and tool messages, or choose a model with tools: true in GET /models",
          type: "invalid_request_error",
          param: "tools",
          code: null,
        },
      });
    } finally {
      await own.close();
    }
    expect(await used(token)).toBe(1);
  });

  it("refuses tools with context_id: a context keeps text turns", async () => {
    const { key } = await signUp("context-tools");
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "svc-70b", messages: [{ role: "user", content: "hi" }], tools: [weatherTool], context_id: "ctx_x" }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("tools");
  });
});

describe("response_format", () => {
  it("relays json_schema to an OpenAI-compatible model, and the SDK parses the reply", async () => {
    const { client } = await signUp("json-openai");
    up.reply = () => '{"name":"Monstera","waterEveryDays":7}';
    const Plant = z.object({ name: z.string(), waterEveryDays: z.number() });
    const reply = await client.chat.completions.parse({ model: "svc-70b", messages: [{ role: "user", content: "A plant" }], response_format: zodResponseFormat(Plant, "plant") });
    expect(reply.choices[0]!.message.parsed).toEqual({ name: "Monstera", waterEveryDays: 7 });
    expect(up.requests.at(-1)!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "plant", strict: true, schema: expect.objectContaining({ type: "object" }) } });

    await client.chat.completions.create({ model: "svc-70b", messages: [{ role: "user", content: "JSON please" }], response_format: { type: "json_object" } });
    expect(up.requests.at(-1)!.body.response_format).toEqual({ type: "json_object" });
  });

  it.each([false, true])("translates json_schema for Anthropic into a forced tool whose input is the reply (stream: %s)", async (stream) => {
    const { client } = await signUp(`json-anthropic-${stream}`);
    up.reply = (req) => (req.body.tool_choice?.type === "tool" ? { toolCalls: [{ name: req.body.tool_choice.name, input: { name: "Fern", waterEveryDays: 3 } }] } : "prose");
    const Plant = z.object({ name: z.string(), waterEveryDays: z.number() });
    const body = { model: "claude-haiku-3.5", messages: [{ role: "user" as const, content: "A plant" }], response_format: zodResponseFormat(Plant, "plant") };
    let content: string;
    if (stream) {
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${(client as unknown as { apiKey: string }).apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ ...body, stream: true }),
      });
      const chunks = parseSse(await res.text()).filter((e) => e.data !== "[DONE]").map((e) => JSON.parse(e.data) as OpenAI.Chat.Completions.ChatCompletionChunk);
      content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
      expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    } else {
      const reply = await client.chat.completions.parse(body);
      expect(reply.choices[0]!.message.parsed).toEqual({ name: "Fern", waterEveryDays: 3 });
      expect(reply.choices[0]!.finish_reason).toBe("stop");
      content = reply.choices[0]!.message.content!;
    }
    expect(JSON.parse(content)).toEqual({ name: "Fern", waterEveryDays: 3 });
    const sent = up.requests.at(-1)!.body;
    expect(sent.tool_choice).toEqual({ type: "tool", name: "plant" });
    expect(sent.tools).toEqual([{ name: "plant", description: expect.any(String), input_schema: expect.objectContaining({ type: "object" }) }]);
    expect(sent).not.toHaveProperty("response_format");
  });
});

describe("images through /v1", () => {
  it("relays image parts to a model that takes images, in each protocol's shape", async () => {
    const { client } = await signUp("images");
    up.reply = () => "a fern";
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      {
        role: "user",
        content: [
          { type: "text", text: "What plant is this?" },
          { type: "image_url", image_url: { url: "https://example.com/fern.png", detail: "low" } },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        ],
      },
    ];
    expect((await client.chat.completions.create({ model: "gpt-4o-mini", messages })).choices[0]!.message.content).toBe("a fern");
    expect(up.requests.at(-1)!.body.messages[0]!.content).toEqual([
      { type: "text", text: "What plant is this?" },
      { type: "image_url", image_url: { url: "https://example.com/fern.png", detail: "low" } },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    ]);
    await client.chat.completions.create({ model: "claude-haiku-3.5", messages });
    expect(up.requests.at(-1)!.body.messages[0]!.content).toEqual([
      { type: "text", text: "What plant is this?" },
      { type: "image", source: { type: "url", url: "https://example.com/fern.png" } },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
    ]);
  });
});
