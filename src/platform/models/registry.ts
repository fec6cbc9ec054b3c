import type { Config } from "../config";
import type { ModelAdapter, UpstreamFetch } from "./adapter";
import { anthropicAdapter } from "./anthropic";
import { DEFAULT_MODEL_ID, MODEL_CATALOG, type ModelInfo } from "./catalog";
import { openAiCompatibleAdapter } from "./openai-compatible";
import { workersAiAdapter, type WorkersAiBinding } from "./workers-ai";

/** A catalog model as this deployment serves it. */
export interface RegisteredModel extends ModelInfo {
  /** Credits one message costs here (MODEL_CREDITS, else the catalog's price). */
  credits: number;
  default: boolean;
  available: boolean;
  /** Present exactly when available. */
  adapter?: ModelAdapter;
  /** When unavailable: what the operator must configure, as a phrase. */
  setup?: string;
}

export interface ModelRegistry {
  /** Every catalog model, in catalog order. */
  list(): readonly RegisteredModel[];
  get(id: string): RegisteredModel | undefined;
}

type OpenAiStyleProvider = "openai" | "groq" | "together" | "openrouter";

/** OpenAI-compatible providers: their variables and public endpoints. */
const OPENAI_STYLE: Record<OpenAiStyleProvider, { key: keyof Config; url: keyof Config; baseUrl: string }> = {
  openai: { key: "OPENAI_API_KEY", url: "OPENAI_BASE_URL", baseUrl: "https://api.openai.com/v1" },
  groq: { key: "GROQ_API_KEY", url: "GROQ_BASE_URL", baseUrl: "https://api.groq.com/openai/v1" },
  together: { key: "TOGETHER_API_KEY", url: "TOGETHER_BASE_URL", baseUrl: "https://api.together.xyz/v1" },
  openrouter: { key: "OPENROUTER_API_KEY", url: "OPENROUTER_BASE_URL", baseUrl: "https://openrouter.ai/api/v1" },
};

const ANTHROPIC_BASE_URL = "https://api.anthropic.com";

export interface RegistryOptions {
  /** The Workers AI binding (`env.AI`), which serves svc-70b when no base URL is set. */
  workersAi?: WorkersAiBinding;
  /** How adapters call their upstreams (default: the global fetch). */
  fetch?: UpstreamFetch;
}

/**
 * Binds each catalog model to its provider's adapter, as configured. Built once per process
 * or isolate; adapters hold no I/O objects, only URLs and keys.
 */
export function createModelRegistry(config: Config, options: RegistryOptions = {}): ModelRegistry {
  const setting = (name: keyof Config) => config[name] as string | undefined;

  const bind = (model: ModelInfo): { adapter?: ModelAdapter; setup?: string } => {
    switch (model.provider) {
      case "svc":
        if (config.SVC_MODEL_BASE_URL) {
          return {
            adapter: openAiCompatibleAdapter({
              baseUrl: config.SVC_MODEL_BASE_URL,
              apiKey: config.SVC_MODEL_API_KEY,
              model: config.SVC_MODEL_UPSTREAM,
              fetch: options.fetch,
            }),
          };
        }
        if (options.workersAi) return { adapter: workersAiAdapter({ binding: options.workersAi, model: config.SVC_MODEL_WORKERS_AI }) };
        return { setup: "set SVC_MODEL_BASE_URL (an OpenAI-compatible endpoint) or bind Workers AI as AI" };
      case "anthropic":
        if (!config.ANTHROPIC_API_KEY) return { setup: "set ANTHROPIC_API_KEY" };
        return {
          adapter: anthropicAdapter({
            baseUrl: config.ANTHROPIC_BASE_URL ?? ANTHROPIC_BASE_URL,
            apiKey: config.ANTHROPIC_API_KEY,
            model: model.upstream,
            fetch: options.fetch,
          }),
        };
      default: {
        const provider = OPENAI_STYLE[model.provider];
        const apiKey = setting(provider.key);
        const baseUrl = setting(provider.url);
        // A base URL alone enables the provider: local servers (Ollama, vLLM) take no key.
        if (!apiKey && !baseUrl) return { setup: `set ${provider.key}` };
        return { adapter: openAiCompatibleAdapter({ baseUrl: baseUrl ?? provider.baseUrl, apiKey, model: model.upstream, fetch: options.fetch }) };
      }
    }
  };

  const models: RegisteredModel[] = MODEL_CATALOG.map((info) => {
    const { adapter, setup } = bind(info);
    const upstream = info.provider === "svc" && config.SVC_MODEL_BASE_URL ? config.SVC_MODEL_UPSTREAM : info.upstream;
    return {
      ...info,
      upstream,
      credits: config.MODEL_CREDITS[info.id] ?? info.credits,
      default: info.id === DEFAULT_MODEL_ID,
      available: adapter !== undefined,
      ...(adapter ? { adapter } : { setup }),
    };
  });
  const byId = new Map(models.map((m) => [m.id, m]));

  return { list: () => models, get: (id) => byId.get(id) };
}
