/**
 * The models a deployment offers, as configuration: the operator's `MODELS` (or, on Node,
 * `MODELS_FILE`; see configured-models.ts), else the built-in catalog below, bound to the
 * provider variables the service has always read. The registry (registry.ts) binds each
 * entry to an adapter; discovery (discovery.ts) adds the models a provider lists.
 */

/** How a model is called: OpenAI's chat completions (any compatible server), Anthropic's Messages, or the Workers AI binding. */
export type Protocol = "openai" | "anthropic" | "workers-ai";

/** A fixed speed label, shown until the model has measurements on this deployment. */
export type SpeedLabel = "fast" | "medium" | "slow";

/** What a model costs, holds and accepts: shared by configured and discovered models. */
export interface ModelTerms {
  /** Credits one message costs. */
  credits: number;
  /** Tokens the model accepts, prompt and reply together. */
  contextWindow: number;
  /** Whether image content parts are relayed to it. */
  images: boolean;
  /** Whether `tools` are relayed to it. */
  tools: boolean;
  /** Models tried in order when this one's provider fails before the first token. */
  fallbacks: string[];
}

/** One model as configured. */
export interface ModelEntry extends ModelTerms {
  /** The public id clients name. */
  id: string;
  name: string;
  description: string;
  /** Who serves it: GET /models' `provider`, /v1's `owned_by`. */
  provider: string;
  protocol: Protocol;
  /** openai: the API base ending in /v1; anthropic: the API origin; none for workers-ai. */
  baseUrl?: string;
  /** The key itself, read from the variable the entry names. */
  apiKey?: string;
  /** The model's name at its provider (for workers-ai, the binding's model name). */
  upstream: string;
  /** The one model a message without `model` goes to (exactly one static entry has it). */
  default: boolean;
  speed?: SpeedLabel;
  /** What the provider charges the operator, in any currency, per million tokens in and out (GET /admin/usage's cost). */
  inputPricePerMillion?: number;
  outputPricePerMillion?: number;
  /**
   * What the operator must do for the model to be callable, as a phrase ("set HOUSE_KEY"):
   * present when the entry lacks it; for workers-ai, what to do when the binding is absent.
   */
  setup?: string;
}

/** How an upstream lists its models. */
export type Listing = "openai" | "anthropic" | "ollama";

/** A provider whose models are read from the upstream and offered under a prefix. */
export interface DiscoveryEntry extends ModelTerms {
  /** Names the provider in logs and in `provider`. */
  id: string;
  /** Each listed model is offered as `<prefix><its name upstream>`. */
  prefix: string;
  description: string;
  provider: string;
  protocol: "openai" | "anthropic";
  listing: Listing;
  /** The base its models are called at (openai: …/v1; anthropic: the origin). */
  baseUrl: string;
  /** Where the list is read, when not at the base (Ollama's /api/tags). */
  listUrl?: string;
  apiKey?: string;
  /** Set when the provider cannot be used as configured: what the operator must do. */
  setup?: string;
  /** How often the list is read again. */
  refreshMs: number;
  /** A local server that stops takes its models with it; a remote provider's last list is kept through an outage. */
  dropOnFailure: boolean;
  /** Its first model becomes the default while the configured default is not available (a local Ollama on first run). */
  standIn: boolean;
}

export interface Catalog {
  /** True when MODELS or MODELS_FILE set the catalog; false for the built-in one. */
  configured: boolean;
  models: ModelEntry[];
  discover: DiscoveryEntry[];
}

/** The default model of the built-in catalog. */
export const DEFAULT_MODEL_ID = "svc-70b";

/** How often a configured provider's model list is read again. */
export const DISCOVERY_REFRESH_MS = 5 * 60_000;

/** The provider variables of the built-in catalog, as config.ts parses them. */
export interface BuiltInVariables {
  SVC_MODEL_BASE_URL?: string;
  SVC_MODEL_API_KEY?: string;
  SVC_MODEL_UPSTREAM: string;
  /** The service model's display name (its built-in one when unset). */
  SVC_MODEL_NAME?: string;
  SVC_MODEL_WORKERS_AI: string;
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
  GROQ_API_KEY?: string;
  GROQ_BASE_URL?: string;
  TOGETHER_API_KEY?: string;
  TOGETHER_BASE_URL?: string;
  OPENROUTER_API_KEY?: string;
  OPENROUTER_BASE_URL?: string;
  ANTHROPIC_API_KEY?: string;
  ANTHROPIC_BASE_URL?: string;
}

export const ANTHROPIC_BASE_URL = "https://api.anthropic.com";

/** OpenAI-compatible providers of the built-in catalog: their variables and public endpoints. */
const OPENAI_STYLE = {
  openai: { key: "OPENAI_API_KEY", url: "OPENAI_BASE_URL", baseUrl: "https://api.openai.com/v1" },
  groq: { key: "GROQ_API_KEY", url: "GROQ_BASE_URL", baseUrl: "https://api.groq.com/openai/v1" },
  together: { key: "TOGETHER_API_KEY", url: "TOGETHER_BASE_URL", baseUrl: "https://api.together.xyz/v1" },
  openrouter: { key: "OPENROUTER_API_KEY", url: "OPENROUTER_BASE_URL", baseUrl: "https://openrouter.ai/api/v1" },
} as const;

interface BuiltInModel {
  id: string;
  name: string;
  provider: "svc" | keyof typeof OPENAI_STYLE | "anthropic";
  description: string;
  speed: SpeedLabel;
  contextWindow: number;
  upstream: string;
  images: boolean;
  tools: boolean;
}

const BUILT_IN: readonly BuiltInModel[] = [
  {
    id: "svc-70b",
    name: "Service 70B",
    provider: "svc",
    description: "The service's own 70B model: a capable general assistant.",
    speed: "medium",
    contextWindow: 131_072,
    upstream: "llama-3.3-70b",
    images: false,
    tools: true,
  },
  {
    id: "gpt-4o-mini",
    name: "GPT-4o mini",
    provider: "openai",
    description: "OpenAI's small, fast multimodal model.",
    speed: "fast",
    contextWindow: 128_000,
    upstream: "gpt-4o-mini",
    images: true,
    tools: true,
  },
  {
    id: "gpt-4o",
    name: "GPT-4o",
    provider: "openai",
    description: "OpenAI's flagship general model: stronger reasoning, slower than mini.",
    speed: "medium",
    contextWindow: 128_000,
    upstream: "gpt-4o",
    images: true,
    tools: true,
  },
  {
    id: "llama-3.1-8b-instant",
    name: "Llama 3.1 8B Instant (Groq)",
    provider: "groq",
    description: "A small Llama served at very high speed by Groq.",
    speed: "fast",
    contextWindow: 131_072,
    upstream: "llama-3.1-8b-instant",
    images: false,
    tools: true,
  },
  {
    id: "llama-3.3-70b-turbo",
    name: "Llama 3.3 70B Turbo (Together)",
    provider: "together",
    description: "Meta's 70B instruction model, quantized for speed by Together AI.",
    speed: "fast",
    contextWindow: 131_072,
    upstream: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    images: false,
    tools: true,
  },
  {
    id: "deepseek-v3",
    name: "DeepSeek V3 (OpenRouter)",
    provider: "openrouter",
    description: "DeepSeek's large mixture-of-experts model, strong at code, through OpenRouter.",
    speed: "medium",
    contextWindow: 64_000,
    upstream: "deepseek/deepseek-chat",
    images: false,
    tools: true,
  },
  {
    id: "claude-haiku-3.5",
    name: "Claude 3.5 Haiku",
    provider: "anthropic",
    description: "Anthropic's fastest model, for quick everyday answers.",
    speed: "fast",
    contextWindow: 200_000,
    upstream: "claude-3-5-haiku-20241022",
    images: true,
    tools: true,
  },
  {
    id: "claude-sonnet-4",
    name: "Claude Sonnet 4",
    provider: "anthropic",
    description: "Anthropic's balanced model for reasoning and writing.",
    speed: "slow",
    contextWindow: 200_000,
    upstream: "claude-sonnet-4-20250514",
    images: true,
    tools: true,
  },
];

/**
 * The built-in catalog, bound to the provider variables: what a deployment without MODELS
 * offers, as it always has. Every model costs 1 credit (MODEL_CREDITS overrides).
 */
export function builtInCatalog(vars: BuiltInVariables): ModelEntry[] {
  return BUILT_IN.map((model): ModelEntry => {
    const common = {
      id: model.id,
      name: model.name,
      description: model.description,
      provider: model.provider,
      speed: model.speed,
      contextWindow: model.contextWindow,
      credits: 1,
      images: model.images,
      tools: model.tools,
      fallbacks: [],
      default: model.id === DEFAULT_MODEL_ID,
    };
    switch (model.provider) {
      case "svc":
        if (vars.SVC_MODEL_NAME) common.name = vars.SVC_MODEL_NAME;
        if (vars.SVC_MODEL_BASE_URL) {
          return { ...common, protocol: "openai", baseUrl: vars.SVC_MODEL_BASE_URL, apiKey: vars.SVC_MODEL_API_KEY, upstream: vars.SVC_MODEL_UPSTREAM };
        }
        // Without a base URL, the Workers AI binding serves it when bound (no tools there).
        return {
          ...common,
          tools: false,
          protocol: "workers-ai",
          upstream: vars.SVC_MODEL_WORKERS_AI,
          setup: "set SVC_MODEL_BASE_URL (an OpenAI-compatible endpoint) or bind Workers AI as AI",
        };
      case "anthropic":
        return {
          ...common,
          protocol: "anthropic",
          baseUrl: vars.ANTHROPIC_BASE_URL ?? ANTHROPIC_BASE_URL,
          apiKey: vars.ANTHROPIC_API_KEY,
          upstream: model.upstream,
          ...(vars.ANTHROPIC_API_KEY ? {} : { setup: "set ANTHROPIC_API_KEY" }),
        };
      default: {
        const provider = OPENAI_STYLE[model.provider];
        const apiKey = vars[provider.key];
        const baseUrl = vars[provider.url];
        // A base URL alone enables the provider: local servers (Ollama, vLLM) take no key.
        return {
          ...common,
          protocol: "openai",
          baseUrl: baseUrl ?? provider.baseUrl,
          apiKey,
          upstream: model.upstream,
          ...(apiKey || baseUrl ? {} : { setup: `set ${provider.key}` }),
        };
      }
    }
  });
}

/** Whether the catalog names a model a Node server (which has no Workers AI binding) can call, or a provider to discover them at. */
export function configuresAModel(catalog: Catalog): boolean {
  return catalog.discover.length > 0 || catalog.models.some((m) => m.protocol !== "workers-ai" && m.setup === undefined);
}

/** A local Ollama, found on first run: its models under `ollama/`, called through its OpenAI-compatible /v1, its list read every `refreshMs`. */
export function localOllama(baseUrl: string, refreshMs: number): DiscoveryEntry {
  const origin = baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  return {
    id: "ollama",
    prefix: "ollama/",
    provider: "ollama",
    description: `A model of the local Ollama at ${origin}.`,
    protocol: "openai",
    listing: "ollama",
    baseUrl: `${origin}/v1`,
    listUrl: `${origin}/api/tags`,
    credits: 1,
    // Ollama's own default context length; a MODELS entry can say more.
    contextWindow: 4096,
    images: false,
    tools: false,
    fallbacks: [],
    refreshMs,
    dropOnFailure: true,
    standIn: true,
  };
}
