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
  contextWindow: number;
  /** Credits one message costs. */
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
