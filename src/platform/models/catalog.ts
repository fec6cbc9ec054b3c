/**
 * The models the service offers, by public id. Which of them can actually be called
 * depends on configuration (see the registry); this list is the same everywhere.
 */
export interface ModelInfo {
  id: string;
  name: string;
  provider: "svc" | "openai" | "groq" | "together" | "openrouter" | "anthropic";
  description: string;
  speed: "fast" | "medium" | "slow";
  /** Tokens the model accepts, prompt and reply together. */
  contextWindow: number;
  /** Credits one message costs, unless MODEL_CREDITS says otherwise. */
  credits: number;
  /** The model's name at its provider, unless configured otherwise. */
  upstream: string;
}

export const DEFAULT_MODEL_ID = "svc-70b";

export const MODEL_CATALOG: readonly ModelInfo[] = [
  {
    id: "svc-70b",
    name: "Service 70B",
    provider: "svc",
    description: "The service's own 70B model: a capable general assistant.",
    speed: "medium",
    contextWindow: 131_072,
    credits: 1,
    upstream: "llama-3.3-70b",
  },
  {
    id: "gpt-4o-mini",
    name: "GPT-4o mini",
    provider: "openai",
    description: "OpenAI's small, fast multimodal model.",
    speed: "fast",
    contextWindow: 128_000,
    credits: 1,
    upstream: "gpt-4o-mini",
  },
  {
    id: "gpt-4o",
    name: "GPT-4o",
    provider: "openai",
    description: "OpenAI's flagship general model: stronger reasoning, slower than mini.",
    speed: "medium",
    contextWindow: 128_000,
    credits: 1,
    upstream: "gpt-4o",
  },
  {
    id: "llama-3.1-8b-instant",
    name: "Llama 3.1 8B Instant (Groq)",
    provider: "groq",
    description: "A small Llama served at very high speed by Groq.",
    speed: "fast",
    contextWindow: 131_072,
    credits: 1,
    upstream: "llama-3.1-8b-instant",
  },
  {
    id: "llama-3.3-70b-turbo",
    name: "Llama 3.3 70B Turbo (Together)",
    provider: "together",
    description: "Meta's 70B instruction model, quantized for speed by Together AI.",
    speed: "fast",
    contextWindow: 131_072,
    credits: 1,
    upstream: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
  },
  {
    id: "deepseek-v3",
    name: "DeepSeek V3 (OpenRouter)",
    provider: "openrouter",
    description: "DeepSeek's large mixture-of-experts model, strong at code, through OpenRouter.",
    speed: "medium",
    contextWindow: 64_000,
    credits: 1,
    upstream: "deepseek/deepseek-chat",
  },
  {
    id: "claude-haiku-3.5",
    name: "Claude 3.5 Haiku",
    provider: "anthropic",
    description: "Anthropic's fastest model, for quick everyday answers.",
    speed: "fast",
    contextWindow: 200_000,
    credits: 1,
    upstream: "claude-3-5-haiku-20241022",
  },
  {
    id: "claude-sonnet-4",
    name: "Claude Sonnet 4",
    provider: "anthropic",
    description: "Anthropic's balanced model for reasoning and writing.",
    speed: "slow",
    contextWindow: 200_000,
    credits: 1,
    upstream: "claude-sonnet-4-20250514",
  },
];

export function isKnownModel(id: string): boolean {
  return MODEL_CATALOG.some((m) => m.id === id);
}
