import { fetchUpstream, upstreamJson, upstreamStatusError, type UpstreamFetch } from "./adapter";
import type { DiscoveryEntry } from "./catalog";

// ---------------------------------------------------------------------------------------
// Reading the models a provider lists: OpenAI's GET /v1/models (vLLM, Ollama, OpenRouter,
// OpenAI…), Anthropic's GET /v1/models, or Ollama's GET /api/tags with each model's
// capabilities from POST /api/show. The registry offers each under the provider's prefix.
// ---------------------------------------------------------------------------------------

/** One model an upstream lists, with what it says about it. */
export interface ListedModel {
  /** Its name upstream: what requests name, and the public id after the prefix. */
  name: string;
  /** A display name, when the upstream gives one. */
  displayName?: string;
  contextWindow?: number;
  images?: boolean;
  tools?: boolean;
}

/** A list read within this time, or the reading is given up. */
export const DISCOVERY_TIMEOUT_MS = 5_000;

/** Ollama's capabilities per model and digest: asked once per model version. */
type CapabilityCache = Map<string, { digest: string; capabilities: string[] | undefined }>;

/** Lists the models of a provider. Rejects with an UpstreamError when it cannot. */
export async function listUpstreamModels(
  source: DiscoveryEntry,
  fetcher: UpstreamFetch,
  cache: CapabilityCache = new Map(),
): Promise<ListedModel[]> {
  const signal = AbortSignal.timeout(DISCOVERY_TIMEOUT_MS);
  const get: GetJson = async (url, headers) => {
    const res = await fetchUpstream(fetcher, url, { method: "GET", headers: { accept: "application/json", ...headers }, signal });
    if (!res.ok) throw await upstreamStatusError(res, source.apiKey);
    return upstreamJson<unknown>(res, signal);
  };
  const base = source.baseUrl.replace(/\/+$/, "");
  switch (source.listing) {
    case "openai":
      return listOpenAiModels(get, base, source.apiKey);
    case "anthropic":
      return listAnthropicModels(get, base.replace(/\/v1$/, ""), source.apiKey);
    case "ollama": {
      const origin = base.replace(/\/v1$/, "");
      const tags = await listOllamaTags(get, source.listUrl ?? `${origin}/api/tags`);
      return chatModelsOf(tags, cache, origin, fetcher, signal);
    }
  }
}

/** A GET of a provider's JSON, with these headers besides `accept`. */
type GetJson = (url: string, headers: Record<string, string>) => Promise<unknown>;

/** OpenAI's GET /v1/models, at `base` (the API base, ending in /v1). */
async function listOpenAiModels(get: GetJson, base: string, apiKey: string | undefined): Promise<ListedModel[]> {
  const body = (await get(`${base}/models`, apiKey ? { authorization: `Bearer ${apiKey}` } : {})) as { data?: unknown };
  return listOf(body.data).flatMap((m) => {
    const model = m as { id?: unknown; name?: unknown; context_length?: unknown; architecture?: { input_modalities?: unknown }; supported_parameters?: unknown };
    if (typeof model.id !== "string" || model.id === "") return [];
    // OpenRouter says what each model takes; other servers list ids alone.
    const modalities = model.architecture?.input_modalities;
    const parameters = model.supported_parameters;
    return [
      {
        name: model.id,
        ...(typeof model.name === "string" ? { displayName: model.name } : {}),
        ...(typeof model.context_length === "number" && model.context_length > 0 ? { contextWindow: model.context_length } : {}),
        ...(Array.isArray(modalities) ? { images: modalities.includes("image") } : {}),
        ...(Array.isArray(parameters) ? { tools: parameters.includes("tools") } : {}),
      },
    ];
  });
}

/** Anthropic's GET /v1/models, at `origin` (the API's, without /v1). */
async function listAnthropicModels(get: GetJson, origin: string, apiKey: string | undefined): Promise<ListedModel[]> {
  const body = (await get(`${origin}/v1/models?limit=1000`, { "x-api-key": apiKey ?? "", "anthropic-version": "2023-06-01" })) as { data?: unknown };
  return listOf(body.data).flatMap((m) => {
    const model = m as { id?: unknown; display_name?: unknown };
    if (typeof model.id !== "string" || model.id === "") return [];
    return [{ name: model.id, ...(typeof model.display_name === "string" ? { displayName: model.display_name } : {}) }];
  });
}

/** The models of Ollama's GET /api/tags at `url`, with each one's digest (its version). */
async function listOllamaTags(get: GetJson, url: string): Promise<Array<{ name: string; digest: string }>> {
  const body = (await get(url, {})) as { models?: unknown };
  return listOf(body.models).flatMap((m) => {
    const model = m as { name?: unknown; model?: unknown; digest?: unknown };
    const name = typeof model.name === "string" ? model.name : typeof model.model === "string" ? model.model : undefined;
    return name ? [{ name, digest: typeof model.digest === "string" ? model.digest : "" }] : [];
  });
}

/** The Ollama models that can chat, with what they take; capabilities asked of Ollama once per model version. */
async function chatModelsOf(
  tags: Array<{ name: string; digest: string }>,
  cache: CapabilityCache,
  origin: string,
  fetcher: UpstreamFetch,
  signal: AbortSignal,
): Promise<ListedModel[]> {
  const models: ListedModel[] = [];
  for (const { name, digest } of tags) {
    let known = cache.get(name);
    if (!known || known.digest !== digest) {
      known = { digest, capabilities: await ollamaCapabilities(origin, name, fetcher, signal) };
      cache.set(name, known);
    }
    const capabilities = known.capabilities;
    // Embedding models cannot chat; a version of Ollama that does not say is taken at its word.
    if (capabilities && !capabilities.includes("completion")) continue;
    models.push({ name, ...(capabilities ? { images: capabilities.includes("vision"), tools: capabilities.includes("tools") } : {}) });
  }
  return models;
}

/** What Ollama says a model can do (POST /api/show `capabilities`), or undefined when it does not say. */
async function ollamaCapabilities(origin: string, name: string, fetcher: UpstreamFetch, signal: AbortSignal): Promise<string[] | undefined> {
  try {
    const res = await fetcher(`${origin}/api/show`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ model: name }),
      signal,
    });
    if (!res.ok) {
      await res.text().catch(() => "");
      return undefined;
    }
    const body = (await res.json()) as { capabilities?: unknown };
    return Array.isArray(body.capabilities) ? body.capabilities.filter((c): c is string => typeof c === "string") : undefined;
  } catch {
    return undefined;
  }
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
