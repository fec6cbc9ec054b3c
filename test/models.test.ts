import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/platform/config";
import type { WorkersAiBinding } from "../src/platform/models/workers-ai";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse } from "./support/sse";

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
}

let up: FakeUpstream;
beforeAll(async () => {
  up = await startFakeUpstream();
});
afterAll(() => up.close());

async function withHarness(options: Parameters<typeof createHarness>[0], test: (h: Harness) => Promise<void>) {
  const h = await createHarness(options);
  try {
    await test(h);
  } finally {
    await h.close();
  }
}

const models = async (h: Harness) => (await (await h.request("/models")).json()) as Model[];

describe("GET /models", () => {
  it("is public and lists every model with exactly one default, svc-70b", async () => {
    await withHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl } }, async (h) => {
      const res = await h.request("/models");
      expect(res.status).toBe(200);
      const list = (await res.json()) as Model[];
      expect(list.filter((m) => m.default).map((m) => m.id)).toEqual(["svc-70b"]);
      for (const m of list) {
        // The contract's fields, then what a configured catalog and measurements add.
        expect(Object.keys(m).sort()).toEqual([
          "available",
          "contextWindow",
          "credits",
          "default",
          "description",
          "fallbacks",
          "id",
          "images",
          "inPlan",
          "measured",
          "name",
          "provider",
          "speed",
          "tools",
        ]);
        expect(["fast", "medium", "slow"]).toContain(m.speed);
        expect(m.credits).toBe(1);
      }
      expect(new Set(list.map((m) => m.speed)).size).toBeGreaterThan(1);
      expect(new Set(list.map((m) => m.provider))).toEqual(new Set(["svc", "openai", "groq", "together", "openrouter", "anthropic"]));
    });
  });

  it("marks exactly the models whose providers are configured as available", async () => {
    await withHarness({ env: { GROQ_API_KEY: "gsk_test", ANTHROPIC_API_KEY: "sk-ant-test" } }, async (h) => {
      const available = (await models(h)).filter((m) => m.available).map((m) => m.id);
      expect(available).toEqual(["llama-3.1-8b-instant", "claude-haiku-3.5", "claude-sonnet-4"]);
    });
  });

  it("tells an admin what to set for each model that cannot answer, and nobody else", async () => {
    await withHarness({ env: { GROQ_API_KEY: "gsk_test", ADMINS: "boss@example.com" } }, async (h) => {
      const list = async (init: Parameters<Harness["request"]>[1] = {}) => (await (await h.request("/models", init)).json()) as Array<Model & { setup?: string }>;
      const admin = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
      const seen = await list({ token: admin });
      expect(seen.find((m) => m.id === "claude-sonnet-4")).toMatchObject({ available: false, setup: "set ANTHROPIC_API_KEY" });
      expect(seen.find((m) => m.id === "gpt-4o")).toMatchObject({ available: false, setup: "set OPENAI_API_KEY" });
      expect(seen.find((m) => m.id === "svc-70b")!.setup).toMatch(/^set SVC_MODEL_BASE_URL .* or bind Workers AI as AI$/);
      // What can answer needs nothing set.
      expect(seen.filter((m) => m.available).map((m) => [m.id, m.setup])).toEqual([["llama-3.1-8b-instant", undefined]]);
      expect(seen.filter((m) => !m.available).every((m) => m.setup?.startsWith("set "))).toBe(true);

      // A person who is not an admin, an admin's API key and an anonymous caller: the same list, without it.
      const { key } = (await (await h.request("/keys", { method: "POST", token: admin, json: {} })).json()) as { key: string };
      for (const init of [{ token: await h.signIn("someone") }, { apiKey: key }, {}]) {
        const other = await list(init);
        expect(other.map((m) => [m.id, m.available])).toEqual(seen.map((m) => [m.id, m.available]));
        expect(other.some((m) => "setup" in m)).toBe(false);
      }
    });
  });

  it("applies per-model prices from MODEL_CREDITS to the list and to the charge", async () => {
    await withHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, DAILY_CREDITS: "5", MODEL_CREDITS: "svc-70b=2, gpt-4o=3" } }, async (h) => {
      const list = await models(h);
      expect(list.find((m) => m.id === "svc-70b")!.credits).toBe(2);
      expect(list.find((m) => m.id === "gpt-4o")!.credits).toBe(3);
      const token = await h.signIn("pricey");
      const send = () => h.request("/chat/send", { method: "POST", token, json: { message: "hi" } });
      expect((await send()).status).toBe(200);
      const second = (await (await send()).json()) as { credits: { used: number; remaining: number } };
      expect(second.credits).toMatchObject({ used: 4, remaining: 1 });
      const refused = await send();
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { message: string }).message).toMatch(/svc-70b costs 2 credits and 1 remain today/);
    });
  });

  it("refuses a model priced above the whole allowance with a 402 that says so", async () => {
    await withHarness({ env: { SVC_MODEL_BASE_URL: up.baseUrl, DAILY_CREDITS: "5", MODEL_CREDITS: "svc-70b=9" } }, async (h) => {
      const token = await h.signIn("too-pricey");
      const res = await h.request("/chat/send", { method: "POST", token, json: { message: "hi" } });
      expect(res.status).toBe(402);
      expect(((await res.json()) as { message: string }).message).toMatch(/more than the daily allowance of 5/);
    });
  });
});

describe("configuration", () => {
  it.each([
    ["svc-70b=0", /MODEL_CREDITS must be model=credits pairs/],
    ["svc-70b", /MODEL_CREDITS must be model=credits pairs/],
    ["gpt-9=2", /MODEL_CREDITS names an unknown model 'gpt-9'/],
  ])("refuses MODEL_CREDITS=%s naming the variable", (value, pattern) => {
    expect(() => parseConfig({ AUTH_HS256_SECRET: "x".repeat(32), MODEL_CREDITS: value })).toThrow(pattern);
  });

  it("refuses a provider base URL that is not absolute", () => {
    expect(() => parseConfig({ AUTH_HS256_SECRET: "x".repeat(32), OPENAI_BASE_URL: "localhost:11434" })).toThrow(/OPENAI_BASE_URL/);
  });

  it("enables an OpenAI-compatible provider by its base URL alone, for keyless local servers", async () => {
    await withHarness({ env: { OPENAI_BASE_URL: up.baseUrl } }, async (h) => {
      const token = await h.signIn("local-openai");
      const res = await h.request("/chat/send", { method: "POST", token, json: { message: "hi", model: "gpt-4o-mini" } });
      expect(res.status).toBe(200);
      expect(up.requests.at(-1)!.body.model).toBe("gpt-4o-mini");
      expect(up.requests.at(-1)!.headers.authorization).toBeUndefined();
    });
  });
});

describe("upstream connections on Node", () => {
  // A connection still finishing one reply when the next message goes out may add a second.
  it("sends consecutive messages, whole and streamed, over kept-alive connections, not one each", async () => {
    const own = await startFakeUpstream();
    try {
      await withHarness({ env: { SVC_MODEL_BASE_URL: own.baseUrl } }, async (h) => {
        const token = await h.signIn("pooled");
        for (const stream of [true, false, true, true, false, true, true, false]) {
          const res = await h.request("/chat/send", { method: "POST", token, json: { message: "hi", stream } });
          expect(res.status).toBe(200);
          await res.text();
        }
        expect(own.requests).toHaveLength(8);
        expect(own.connections()).toBeLessThanOrEqual(2);
      });
    } finally {
      await own.close();
    }
  });
});

/** A Workers AI binding as workerd provides it: `{ response }`, or an SSE byte stream. */
function workersAiBinding(calls: Array<{ model: string; inputs: Record<string, unknown> }>): WorkersAiBinding {
  return {
    async run(model, inputs) {
      calls.push({ model, inputs });
      if (!inputs.stream) return { response: "from workers ai" };
      const events = `${["from ", "workers ", "ai"].map((p) => `data: ${JSON.stringify({ response: p })}\n\n`).join("")}data: [DONE]\n\n`;
      return new Response(events).body;
    },
  };
}

describe("svc-70b on the Workers AI binding", () => {
  it("serves svc-70b through the binding when no base URL is set, whole and streamed", async () => {
    const calls: Array<{ model: string; inputs: Record<string, unknown> }> = [];
    await withHarness({ workersAi: workersAiBinding(calls) }, async (h) => {
      expect((await models(h)).find((m) => m.id === "svc-70b")!.available).toBe(true);
      const token = await h.signIn("workers-ai");
      const whole = (await (await h.request("/chat/send", { method: "POST", token, json: { message: "hi" } })).json()) as { response: string };
      expect(whole.response).toBe("from workers ai");
      expect(calls[0]).toEqual({ model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast", inputs: { messages: [{ role: "user", content: "hi" }], stream: false } });
      const streamed = parseSse(await (await h.request("/chat/send", { method: "POST", token, json: { message: "hi", stream: true } })).text());
      expect(streamed.filter((e) => e.event === "message").map((e) => (JSON.parse(e.data) as { delta: string }).delta).join("")).toBe("from workers ai");
      expect(streamed.at(-1)!.event).toBe("done");
    });
  });

  it("answers 503 saying what to configure when svc-70b has neither a base URL nor the binding", async () => {
    await withHarness({}, async (h) => {
      expect((await models(h)).find((m) => m.id === "svc-70b")!.available).toBe(false);
      const token = await h.signIn("nothing-configured");
      const res = await h.request("/chat/send", { method: "POST", token, json: { message: "hi" } });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { message: string }).message).toMatch(/SVC_MODEL_BASE_URL.*Workers AI/);
    });
  });
});
