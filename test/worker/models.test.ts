import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/platform/config";
import { dbFromD1 } from "../../src/platform/db";
import { createRuntime } from "../../src/platform/deps";
import { call, signIn } from "./support";

// Models as configuration in workerd over D1: a MODELS catalog whose provider's models are
// read from its GET /v1/models with the Worker's fetch, and a fallback that answers when the
// model's server is down, charged at its price in the batch D1 runs.

describe("MODELS in workerd", () => {
  it("offers a discovered provider's models and falls back from a server that is down, charging the fallback's price", async () => {
    const upstream = env.SVC_MODEL_BASE_URL;
    const catalog = [
      // Nothing listens on port 1: the connection is refused (workerd logs its own "Network
      // connection lost" for any refused fetch, even one whose rejection is handled).
      { id: "edge", protocol: "openai", baseUrl: "http://127.0.0.1:1/v1", credits: 2, fallbacks: ["up/worker-llama"], default: true },
      { id: "up", protocol: "openai", baseUrl: upstream, discover: true },
    ];
    const runtime = await createRuntime(parseConfig({ ...(env as unknown as Record<string, unknown>), MODELS: JSON.stringify(catalog) }));
    await runtime.models.refresh();
    const app = createApp(() => ({ ...runtime, db: dbFromD1(env.DB) }));

    const models = (await (await app.request("/models")).json()) as Array<{ id: string; default: boolean; available: boolean; fallbacks: string[] }>;
    expect(models.map((m) => [m.id, m.default, m.available])).toEqual([
      ["edge", true, true],
      ["up/worker-llama", false, true],
    ]);

    const auth = await signIn("models-in-workerd");
    const res = await app.request("/chat/send", { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify({ message: "hello edge" }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Model")).toBe("up/worker-llama");
    expect(await res.json()).toMatchObject({ response: "echo: hello edge", model: "up/worker-llama", credits: { used: 1 } });
    const credits = (await (await app.request("/credits", { headers: auth })).json()) as { used: number };
    expect(credits.used).toBe(1);
    const timings = await env.DB.prepare("select model from model_timings where model = 'up/worker-llama'").all();
    expect(timings.results.length).toBeGreaterThan(0);
  });
});

describe("GET /models in workerd", () => {
  it("tells an admin what to set for each model that cannot answer, and nobody else", async () => {
    type Model = { id: string; available: boolean; setup?: string };
    const list = async (headers: Record<string, string>) => (await (await call("/models", { headers })).json()) as Model[];
    const seen = await list(await signIn("worker-models-boss", { email: "boss@worker.test", email_verified: true }));
    expect(seen.find((m) => m.id === "svc-70b")).toMatchObject({ available: true });
    expect(seen.find((m) => m.id === "svc-70b")).not.toHaveProperty("setup");
    expect(seen.find((m) => m.id === "claude-sonnet-4")).toMatchObject({ available: false, setup: "set ANTHROPIC_API_KEY" });
    expect(seen.filter((m) => !m.available).every((m) => m.setup?.startsWith("set "))).toBe(true);
    for (const headers of [await signIn("worker-models-user"), {}]) {
      const other = await list(headers);
      expect(other.map((m) => m.id)).toEqual(seen.map((m) => m.id));
      expect(other.some((m) => "setup" in m)).toBe(false);
    }
  });
});
