import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/platform/config";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { failedStart, startServerProcess } from "./support/server-process";

// The catalog as configuration: MODELS (and MODELS_FILE on Node), providers whose models
// are read from their GET /v1/models, and a local Ollama found on first run. The upstreams
// are real HTTP servers on loopback.

interface Model {
  id: string;
  name: string;
  provider: string;
  description: string;
  speed: string;
  contextWindow: number;
  credits: number;
  default: boolean;
  available: boolean;
  images: boolean;
  tools: boolean;
  fallbacks: string[];
  measured: { samples: number; timeToFirstTokenMs: number | null; tokensPerSecond: number | null };
}

let up: FakeUpstream;
let other: FakeUpstream;
beforeAll(async () => {
  up = await startFakeUpstream();
  other = await startFakeUpstream();
});
afterAll(async () => {
  await up.close();
  await other.close();
});

async function withHarness(options: Parameters<typeof createHarness>[0], test: (h: Harness) => Promise<void>) {
  const h = await createHarness(options);
  try {
    await test(h);
  } finally {
    await h.close();
  }
}

const models = async (h: Harness) => (await (await h.request("/models")).json()) as Model[];
const send = (h: Harness, token: string, json: unknown) => h.request("/chat/send", { method: "POST", token, json });

/** A MODELS value of two house models and a Claude, as an operator would write it. */
function houseCatalog() {
  return JSON.stringify([
    {
      id: "house-fast",
      name: "House fast",
      description: "Our own 8B on the GPU box.",
      protocol: "openai",
      baseUrl: up.baseUrl,
      apiKeyEnv: "HOUSE_KEY",
      upstream: "llama-3.1-8b",
      credits: 2,
      contextWindow: 131072,
      images: false,
      tools: true,
      fallbacks: ["house-backup"],
      default: true,
    },
    { id: "house-backup", protocol: "openai", baseUrl: other.baseUrl, upstream: "qwen-7b" },
    { id: "claude", name: "Claude", protocol: "anthropic", baseUrl: up.origin, apiKeyEnv: "CLAUDE_KEY", upstream: "claude-sonnet-4-5", images: true, tools: true },
  ]);
}

const AUTH = { AUTH_HS256_SECRET: "x".repeat(32), AUTH_AUDIENCE: "plant-chat-test" };

describe("MODELS", () => {
  it("replaces the built-in catalog with the operator's models, their prices, capabilities, fallbacks and default", async () => {
    await withHarness({ env: { MODELS: houseCatalog(), HOUSE_KEY: "house-secret" } }, async (h) => {
      const list = await models(h);
      expect(list.map((m) => m.id)).toEqual(["house-fast", "house-backup", "claude"]);
      expect(list[0]).toEqual({
        id: "house-fast",
        name: "House fast",
        provider: "127.0.0.1",
        description: "Our own 8B on the GPU box.",
        speed: "unknown",
        contextWindow: 131072,
        credits: 2,
        default: true,
        available: true,
        images: false,
        tools: true,
        fallbacks: ["house-backup"],
        measured: { samples: 0, timeToFirstTokenMs: null, tokensPerSecond: null },
        inPlan: true,
      });
      expect(list[1]).toMatchObject({ name: "house-backup", credits: 1, contextWindow: 8192, default: false, available: true, images: false, tools: false });
      // Its key's variable is not set: listed, not callable.
      expect(list[2]).toMatchObject({ id: "claude", provider: "anthropic", available: false, images: true, tools: true });
    });
  });

  it("sends a message to the configured server, under the model's upstream name and with the key from its variable", async () => {
    await withHarness({ env: { MODELS: houseCatalog(), HOUSE_KEY: "house-secret" } }, async (h) => {
      const token = await h.signIn("house-user");
      const res = await send(h, token, { message: "hello house" });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ response: "echo: hello house", model: "house-fast", credits: { used: 2 } });
      const sent = up.requests.at(-1)!;
      expect(sent.body.model).toBe("llama-3.1-8b");
      expect(sent.headers.authorization).toBe("Bearer house-secret");

      // A keyless model sends no Authorization at all.
      expect((await send(h, token, { message: "hi", model: "house-backup" })).status).toBe(200);
      expect(other.requests.at(-1)!.body.model).toBe("qwen-7b");
      expect(other.requests.at(-1)!.headers.authorization).toBeUndefined();
    });
  });

  it("answers a model whose key is not set with 503 naming the variable, and an unknown one with 400 listing the configured ones", async () => {
    await withHarness({ env: { MODELS: houseCatalog() } }, async (h) => {
      const token = await h.signIn("house-nokey");
      const unconfigured = await send(h, token, { message: "hi", model: "claude" });
      expect(unconfigured.status).toBe(503);
      expect(((await unconfigured.json()) as { message: string }).message).toMatch(/model claude is not configured on this server \(the operator must set CLAUDE_KEY\)/);
      const unknown = await send(h, token, { message: "hi", model: "svc-70b" });
      expect(unknown.status).toBe(400);
      expect(((await unknown.json()) as { message: string }).message).toMatch(/unknown model 'svc-70b'; available models: house-backup$/);
      expect(((await (await h.request("/credits", { token })).json()) as { used: number }).used).toBe(0);
    });
  });

  it("names the service's own model SVC_MODEL_NAME when the operator gives one", () => {
    const named = parseConfig({ ...AUTH, SVC_MODEL_BASE_URL: "http://127.0.0.1:1/v1", SVC_MODEL_NAME: "Qwen 2.5 7B" });
    expect(named.catalog.models.find((m) => m.id === "svc-70b")!.name).toBe("Qwen 2.5 7B");
    expect(parseConfig({ ...AUTH }).catalog.models.find((m) => m.id === "svc-70b")!.name).toBe("Service 70B");
  });

  it("applies MODEL_CREDITS to the operator's models and refuses it for an id the catalog lacks", () => {
    const config = parseConfig({ ...AUTH, MODELS: houseCatalog(), MODEL_CREDITS: "house-backup=5" });
    expect(config.catalog.models.find((m) => m.id === "house-backup")!.credits).toBe(5);
    expect(() => parseConfig({ ...AUTH, MODELS: houseCatalog(), MODEL_CREDITS: "svc-70b=2" })).toThrow(/MODEL_CREDITS names an unknown model 'svc-70b'/);
  });

  it.each([
    ["not JSON", "[{", /MODELS is not valid JSON/],
    ["not an array", '{"id":"x"}', /MODELS must be a JSON array of models/],
    ["empty", "[]", /MODELS must list at least one model/],
    ["a bad base URL", '[{"id":"m","protocol":"openai","baseUrl":"gpu-1:8000/v1"}]', /MODELS\[0\] \(m\)\.baseUrl: must be an absolute http:\/\/ or https:\/\/ URL/],
    ["no base URL for openai", '[{"id":"m","protocol":"openai"}]', /MODELS\[0\] \(m\)\.baseUrl: is required for protocol openai/],
    ["an unknown protocol", '[{"id":"m","protocol":"grpc"}]', /MODELS\[0\] \(m\)\.protocol: must be openai \(any OpenAI-compatible server\), anthropic or workers-ai/],
    ["a misspelt field", '[{"id":"m","protocol":"openai","baseURL":"http://a/v1"}]', /MODELS\[0\] \(m\)\.baseURL: unknown field/],
    ["a bad price", '[{"id":"a","protocol":"openai","baseUrl":"http://a/v1"},{"id":"m","protocol":"openai","baseUrl":"http://a/v1","credits":0}]', /MODELS\[1\] \(m\)\.credits: must be 1 or more/],
    ["a text price", '[{"id":"m","protocol":"openai","baseUrl":"http://a/v1","credits":"2"}]', /MODELS\[0\] \(m\)\.credits: must be a number/],
    ["a duplicate id", '[{"id":"m","protocol":"openai","baseUrl":"http://a/v1"},{"id":"m","protocol":"openai","baseUrl":"http://b/v1"}]', /MODELS\[1\] \(m\)\.id: is already the id of MODELS\[0\] \(m\)/],
    ["two defaults", '[{"id":"a","protocol":"openai","baseUrl":"http://a/v1","default":true},{"id":"b","protocol":"openai","baseUrl":"http://a/v1","default":true}]', /MODELS\[1\] \(b\)\.default: only one model may be the default/],
    ["a fallback to nothing", '[{"id":"a","protocol":"openai","baseUrl":"http://a/v1","fallbacks":["zz"]}]', /MODELS\[0\] \(a\)\.fallbacks\[0\]: names no model of MODELS \('zz'\)/],
    ["anthropic without a key", '[{"id":"c","protocol":"anthropic"}]', /MODELS\[0\] \(c\)\.apiKeyEnv: is required for protocol anthropic/],
    ["tools on workers-ai", '[{"id":"w","protocol":"workers-ai","upstream":"@cf/x","tools":true}]', /MODELS\[0\] \(w\)\.tools: must be false for protocol workers-ai/],
    ["a bad variable name", '[{"id":"m","protocol":"openai","baseUrl":"http://a/v1","apiKeyEnv":"my key"}]', /MODELS\[0\] \(m\)\.apiKeyEnv: must be the name of an environment variable/],
  ])("stops the start naming the entry and the field: %s", (_label, value, message) => {
    expect(() => parseConfig({ ...AUTH, MODELS: value })).toThrow(message);
  });

  it("stops the Node server at start with that message", async () => {
    const { code, output } = await failedStart({ MODELS: '[{"id":"house","protocol":"openai","baseUrl":"gpu-1:8000"}]' });
    expect(code).toBe(1);
    expect(output).toMatch(/invalid configuration: MODELS\[0\] \(house\)\.baseUrl: must be an absolute http:\/\/ or https:\/\/ URL/);
  });

  it("refuses MODELS_FILE where files cannot be read (the Worker), and MODELS with MODELS_FILE", () => {
    expect(() => parseConfig({ ...AUTH, MODELS_FILE: "models.json" })).toThrow(/MODELS_FILE is read by the Node server only; on Workers put the catalog in MODELS/);
    expect(() => parseConfig({ ...AUTH, MODELS: "[]", MODELS_FILE: "x" }, { readFile: () => "[]" })).toThrow(/set MODELS or MODELS_FILE, not both/);
    expect(() => parseConfig({ ...AUTH, MODELS_FILE: "/no/such/file.json" }, { readFile: (p) => { throw Object.assign(new Error(p), { code: "ENOENT" }); } })).toThrow(
      /MODELS_FILE \/no\/such\/file.json cannot be read \(ENOENT\)/,
    );
  });

  it("reads MODELS_FILE on the Node server, and names the file in its errors", async () => {
    const dir = mkdtempSync(join(tmpdir(), "models-file-"));
    try {
      const file = join(dir, "models.json");
      writeFileSync(file, JSON.stringify([{ id: "filed", name: "From a file", protocol: "openai", baseUrl: up.baseUrl, upstream: "llama" }]));
      const server = await startServerProcess({ MODELS_FILE: file });
      try {
        const list = (await (await fetch(`${server.url}/models`)).json()) as Model[];
        expect(list.map((m) => [m.id, m.name, m.default, m.available])).toEqual([["filed", "From a file", true, true]]);
        expect(server.output()).toMatch(/"msg":"models available","models":\["filed"\],"default":"filed"/);
      } finally {
        await server.close();
      }
      writeFileSync(file, '[{"id":"filed","protocol":"openai"}]');
      const { code, output } = await failedStart({ MODELS_FILE: file });
      expect(code).toBe(1);
      expect(output).toContain(`MODELS_FILE ${file}[0] (filed).baseUrl: is required for protocol openai`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("providers whose models are discovered", () => {
  it("offers each model an OpenAI-compatible server lists, under its prefix, and reads the list again when it is due", async () => {
    up.models = ["llama-3.1-8b", "qwen2.5-coder"];
    const catalog = JSON.stringify([
      { id: "house", protocol: "openai", baseUrl: up.baseUrl, default: true },
      { id: "vllm", protocol: "openai", baseUrl: up.baseUrl, apiKeyEnv: "VLLM_KEY", discover: true, credits: 3, tools: true, contextWindow: 32768 },
    ]);
    await withHarness({ env: { MODELS: catalog, VLLM_KEY: "vllm-secret" } }, async (h) => {
      await h.deps.models.refresh();
      const list = await models(h);
      expect(list.map((m) => m.id)).toEqual(["house", "vllm/llama-3.1-8b", "vllm/qwen2.5-coder"]);
      expect(list[1]).toMatchObject({ name: "llama-3.1-8b", credits: 3, tools: true, contextWindow: 32768, available: true, default: false });
      expect(up.listings.at(-1)).toBe("/v1/models");

      const token = await h.signIn("discoverer");
      expect((await send(h, token, { message: "hi", model: "vllm/qwen2.5-coder" })).status).toBe(200);
      expect(up.requests.at(-1)!.body.model).toBe("qwen2.5-coder");
      expect(up.requests.at(-1)!.headers.authorization).toBe("Bearer vllm-secret");

      // Read again only once due (every 5 minutes).
      up.models = ["llama-3.1-8b"];
      const listings = up.listings.length;
      await h.deps.models.refresh();
      expect(up.listings.length).toBe(listings);
      h.clock.advance(5 * 60_000);
      await h.deps.models.refresh();
      expect((await models(h)).map((m) => m.id)).toEqual(["house", "vllm/llama-3.1-8b"]);
      const gone = await send(h, token, { message: "hi", model: "vllm/qwen2.5-coder" });
      expect(gone.status).toBe(400);

      // A remote provider that cannot be reached keeps its last list.
      up.mode = "fail";
      h.clock.advance(5 * 60_000);
      await h.deps.models.refresh();
      up.mode = "ok";
      expect((await models(h)).map((m) => m.id)).toEqual(["house", "vllm/llama-3.1-8b"]);
      expect(h.logs.lines.some((l) => l.msg === "could not list a provider's models" && l.fields.provider === "vllm")).toBe(true);
    });
  });

  it("reads Anthropic's model list with its headers and calls each model with the Messages API", async () => {
    up.models = ["claude-sonnet-4-5", "claude-haiku-4-5"];
    const catalog = JSON.stringify([{ id: "anthropic", protocol: "anthropic", baseUrl: up.origin, apiKeyEnv: "ANTHROPIC_KEY", discover: true, prefix: "claude:" }]);
    await withHarness({ env: { MODELS: catalog, ANTHROPIC_KEY: "sk-ant" } }, async (h) => {
      await h.deps.models.refresh();
      const list = await models(h);
      expect(list.map((m) => [m.id, m.name, m.default])).toEqual([
        ["claude:claude-sonnet-4-5", "CLAUDE-SONNET-4-5", true],
        ["claude:claude-haiku-4-5", "CLAUDE-HAIKU-4-5", false],
      ]);
      const token = await h.signIn("claude-discoverer");
      const res = await send(h, token, { message: "hello claude" });
      expect(await res.json()).toMatchObject({ response: "echo: hello claude", model: "claude:claude-sonnet-4-5" });
      expect(up.requests.at(-1)!.path).toBe("/v1/messages");
      expect(up.requests.at(-1)!.headers["x-api-key"]).toBe("sk-ant");
    });
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("a first run with a local Ollama", () => {
  it("offers the Ollama's chat models with the first as the default, and answers a message without a model through it", async () => {
    up.models = ["llama3.2:latest", "nomic-embed-text:latest", "qwen2.5vl:7b"];
    up.capabilities = { "llama3.2:latest": ["completion", "tools"], "nomic-embed-text:latest": ["embedding"], "qwen2.5vl:7b": ["completion", "vision"] };
    try {
      await withHarness({ localOllama: up.origin }, async (h) => {
        await h.deps.models.refresh();
        const list = await models(h);
        const ollama = list.filter((m) => m.provider === "ollama");
        // An embedding model cannot chat: not offered.
        expect(ollama.map((m) => [m.id, m.available, m.default, m.tools, m.images])).toEqual([
          ["ollama/llama3.2:latest", true, true, true, false],
          ["ollama/qwen2.5vl:7b", true, false, false, true],
        ]);
        expect(list.filter((m) => m.default).map((m) => m.id)).toEqual(["ollama/llama3.2:latest"]);
        expect(up.listings).toContain("/api/tags");

        const token = await h.signIn("first-run");
        const res = await send(h, token, { message: "hello ollama" });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ response: "echo: hello ollama", model: "ollama/llama3.2:latest" });
        expect(up.requests.at(-1)!.path).toBe("/v1/chat/completions");
        expect(up.requests.at(-1)!.body.model).toBe("llama3.2:latest");
        // The profile shows the default in force.
        expect(((await (await h.request("/me", { token })).json()) as { preferences: { defaultModel: string } }).preferences.defaultModel).toBe("ollama/llama3.2:latest");

        // Ollama stops: its models go, and svc-70b is the default again (unavailable).
        const port = await closedPort();
        await withHarness({ localOllama: `http://127.0.0.1:${port}` }, async (gone) => {
          await gone.deps.models.refresh();
          const after = await models(gone);
          expect(after.some((m) => m.provider === "ollama")).toBe(false);
          expect(after.filter((m) => m.default).map((m) => m.id)).toEqual(["svc-70b"]);
        });
      });
    } finally {
      up.models = [];
      up.capabilities = {};
    }
  });

  it("looks for it again every 30 seconds, and drops its models when it stops answering", async () => {
    up.models = [];
    await withHarness({ localOllama: up.origin }, async (h) => {
      await h.deps.models.refresh();
      expect((await models(h)).some((m) => m.available)).toBe(false);
      up.models = ["llama3.2:latest"];
      h.clock.advance(29_000);
      await h.deps.models.refresh();
      expect((await models(h)).some((m) => m.available)).toBe(false);
      h.clock.advance(1_000);
      await h.deps.models.refresh();
      expect((await models(h)).filter((m) => m.available).map((m) => m.id)).toEqual(["ollama/llama3.2:latest"]);
      up.mode = "fail";
      h.clock.advance(30_000);
      await h.deps.models.refresh();
      up.mode = "ok";
      expect((await models(h)).some((m) => m.available)).toBe(false);
    });
    up.models = [];
  });

  it("is found by the Node server at start in local mode, which logs the models it offers", async () => {
    up.models = ["llama3.2:latest"];
    const server = await startServerProcess({ OLLAMA_BASE_URL: up.origin });
    try {
      expect(server.output()).toMatch(/"msg":"models available","models":\["ollama\/llama3.2:latest"\],"default":"ollama\/llama3.2:latest"/);
      const list = (await (await fetch(`${server.url}/models`)).json()) as Model[];
      expect(list.find((m) => m.default)!.id).toBe("ollama/llama3.2:latest");
    } finally {
      await server.close();
      up.models = [];
    }
  });

  it("says at start, when no model is available, exactly which variable to set", async () => {
    const server = await startServerProcess({ OLLAMA_BASE_URL: `http://127.0.0.1:${await closedPort()}` });
    try {
      const output = server.output();
      expect(output).toMatch(/no model is available/);
      expect(output).toMatch(/ollama pull llama3.2/);
      expect(output).toMatch(/set SVC_MODEL_BASE_URL to an OpenAI-compatible server/);
      expect(output).toMatch(/MODELS \(or MODELS_FILE\)/);
    } finally {
      await server.close();
    }
  });

  it("is not looked for when a model is configured, nor outside local mode", async () => {
    up.models = ["llama3.2:latest"];
    const listings = up.listings.length;
    // Both at once: each starts on its own.
    const [configured, withProvider] = await Promise.all([
      startServerProcess({ OLLAMA_BASE_URL: up.origin, SVC_MODEL_BASE_URL: other.baseUrl }),
      startServerProcess({ OLLAMA_BASE_URL: up.origin, AUTH_HS256_SECRET: "s".repeat(32), AUTH_AUDIENCE: "plant-chat-test" }),
    ]);
    await configured.close();
    const list = (await (await fetch(`${withProvider.url}/models`)).json()) as Model[];
    await withProvider.close();
    expect(list.some((m) => m.provider === "ollama")).toBe(false);
    expect(up.listings.length).toBe(listings);
    up.models = [];
  }, 60_000);
});
