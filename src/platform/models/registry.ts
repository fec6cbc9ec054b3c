import type { Config } from "../config";
import type { Logger } from "../log";
import type { ModelAdapter, UpstreamFetch } from "./adapter";
import { globalFetch } from "./adapter";
import { anthropicAdapter } from "./anthropic";
import { localOllama, type DiscoveryEntry, type ModelEntry, type Protocol, type SpeedLabel } from "./catalog";
import { listUpstreamModels, type ListedModel } from "./discovery";
import { openAiCompatibleAdapter } from "./openai-compatible";
import { workersAiAdapter, type WorkersAiBinding } from "./workers-ai";

/** A model as this deployment serves it now. */
export interface RegisteredModel {
  id: string;
  name: string;
  provider: string;
  description: string;
  protocol: Protocol;
  /** Its name at the provider. */
  upstream: string;
  /** A configured label, shown until the model has measurements. */
  speed?: SpeedLabel;
  contextWindow: number;
  /** Credits one message costs here. */
  credits: number;
  images: boolean;
  tools: boolean;
  /** Models tried in order when this one fails before its first token. */
  fallbacks: readonly string[];
  default: boolean;
  available: boolean;
  /** Present exactly when available. */
  adapter?: ModelAdapter;
  /** When unavailable: what the operator must configure, as a phrase. */
  setup?: string;
  /** Listed by its provider (discovery) rather than configured one by one. */
  discovered: boolean;
}

export interface ModelRegistry {
  /** Every model: the configured ones in catalog order, then the discovered ones. */
  list(): readonly RegisteredModel[];
  get(id: string): RegisteredModel | undefined;
  /** The model a message goes to when it names none; undefined only when there is no model at all. */
  defaultModel(): RegisteredModel | undefined;
  /**
   * Reads again the model lists that are due (each provider's own interval, at once on the
   * first call). Resolves when they are read; never rejects (a failure is logged and the
   * last list kept, or dropped for a local server that stopped).
   */
  refresh(): Promise<void>;
  /** Whether models come from providers' lists (something for refresh to do). */
  readonly discovers: boolean;
}

export interface RegistryOptions {
  /** The Workers AI binding (`env.AI`), for workers-ai models (svc-70b without a base URL). */
  workersAi?: WorkersAiBinding;
  /** How adapters call their upstreams (default: the global fetch). */
  fetch?: UpstreamFetch;
  /** A local Ollama to offer the models of, at this address (the Node server's first run). */
  localOllama?: string;
  log?: Logger;
  /** The clock that says when a list is due (tests). */
  now?: () => number;
}

/** A list never read yet is tried again this soon, whatever its interval. */
const RETRY_UNLOADED_MS = 10_000;

/** A provider's list as last read. */
interface DiscoveryState {
  source: DiscoveryEntry;
  models: RegisteredModel[];
  /** When it was last read or tried (ms), so that concurrent callers do not all read it. */
  checkedAt?: number;
  loaded: boolean;
  failing: boolean;
  capabilities: Map<string, { digest: string; capabilities: string[] | undefined }>;
}

/**
 * Binds each catalog model to its provider's adapter, as configured, and adds the models
 * that providers list. Built once per process or isolate; adapters hold no I/O objects,
 * only URLs and keys. The lists are a cache that may be lost: an isolate reads them again.
 */
export function createModelRegistry(config: Config, options: RegistryOptions = {}): ModelRegistry {
  const now = options.now ?? Date.now;
  const configured = config.catalog.models.map((entry) => configuredModel(entry, options));
  const sources = [...config.catalog.discover, ...(options.localOllama ? [localOllama(options.localOllama, config.OLLAMA_REFRESH_SECONDS * 1000)] : [])];
  const discoveries: DiscoveryState[] = sources.map((source) => ({ source, models: [], loaded: false, failing: false, capabilities: new Map() }));

  let models: RegisteredModel[] = [];
  let byId = new Map<string, RegisteredModel>();
  let fallbackDefault: RegisteredModel | undefined;
  const rebuild = () => {
    models = servedModels(configured, discoveries);
    byId = new Map(models.map((m) => [m.id, m]));
    fallbackDefault = models.find((m) => m.default);
  };
  rebuild();

  return {
    list: () => models,
    get: (id) => byId.get(id),
    defaultModel: () => fallbackDefault,
    discovers: discoveries.length > 0,
    async refresh() {
      const at = now();
      const due = discoveries.filter((d) => isDue(d, at));
      if (due.length === 0) return;
      await Promise.all(due.map((d) => readDiscovery(d, options)));
      rebuild();
    },
  };
}

type AdapterSettings = Pick<ModelEntry, "protocol" | "baseUrl" | "apiKey" | "upstream" | "setup">;

/** The model's adapter, or, when it cannot have one yet, what the operator must configure. */
function adapterFor(entry: AdapterSettings, options: RegistryOptions): { adapter?: ModelAdapter; setup?: string } {
  switch (entry.protocol) {
    case "workers-ai":
      if (!options.workersAi) return { setup: entry.setup ?? "bind Workers AI as AI" };
      return { adapter: workersAiAdapter({ binding: options.workersAi, model: entry.upstream }) };
    case "anthropic":
      if (entry.setup || !entry.apiKey) return { setup: entry.setup ?? "set the provider's API key" };
      return { adapter: anthropicAdapter({ baseUrl: entry.baseUrl!, apiKey: entry.apiKey, model: entry.upstream, fetch: options.fetch }) };
    case "openai":
      if (entry.setup) return { setup: entry.setup };
      return { adapter: openAiCompatibleAdapter({ baseUrl: entry.baseUrl!, apiKey: entry.apiKey, model: entry.upstream, fetch: options.fetch }) };
  }
}

/** A catalog entry as served. */
function configuredModel(entry: ModelEntry, options: RegistryOptions): RegisteredModel {
  const { adapter, setup } = adapterFor(entry, options);
  return {
    id: entry.id,
    name: entry.name,
    provider: entry.provider,
    description: entry.description,
    protocol: entry.protocol,
    upstream: entry.upstream,
    ...(entry.speed ? { speed: entry.speed } : {}),
    contextWindow: entry.contextWindow,
    credits: entry.credits,
    images: entry.images,
    tools: entry.tools,
    fallbacks: entry.fallbacks,
    default: entry.default,
    available: adapter !== undefined,
    ...(adapter ? { adapter } : { setup }),
    discovered: false,
  };
}

/** A model a provider listed, as served under the provider's prefix and terms. */
function discoveredModel(source: DiscoveryEntry, listed: ListedModel, options: RegistryOptions): RegisteredModel {
  const { adapter, setup } = adapterFor({ protocol: source.protocol, baseUrl: source.baseUrl, apiKey: source.apiKey, upstream: listed.name, setup: source.setup }, options);
  return {
    id: `${source.prefix}${listed.name}`,
    name: listed.displayName ?? listed.name,
    provider: source.provider,
    description: source.description,
    protocol: source.protocol,
    upstream: listed.name,
    contextWindow: listed.contextWindow ?? source.contextWindow,
    credits: source.credits,
    images: listed.images ?? source.images,
    tools: listed.tools ?? source.tools,
    fallbacks: source.fallbacks,
    default: false,
    available: adapter !== undefined,
    ...(adapter ? { adapter } : { setup }),
    discovered: true,
  };
}

/** The list as it stands: configured models, then discovered ones (a configured id wins), with exactly one default. */
function servedModels(configured: readonly RegisteredModel[], discoveries: readonly DiscoveryState[]): RegisteredModel[] {
  const seen = new Set(configured.map((m) => m.id));
  const discovered = discoveries.flatMap((d) =>
    d.models.filter((m) => {
      if (seen.has(m.id)) return false;
      seen.add(m.id);
      return true;
    }),
  );
  const designated = configured.find((m) => m.default);
  // A local stand-in (Ollama on first run) answers while the configured default cannot;
  // without any configured model, the first discovered one is the default.
  const standIn = discoveries.find((d) => d.source.standIn && d.models.some((m) => m.available))?.models.find((m) => m.available);
  const chosen = designated && (designated.available || !standIn) ? designated : (standIn ?? discovered[0]);
  return [...configured, ...discovered].map((m) => (m.default === (m === chosen) ? m : { ...m, default: m === chosen }));
}

/** Whether a provider's list is to be read again at `at` (ms). */
function isDue(state: DiscoveryState, at: number): boolean {
  return state.checkedAt === undefined || at - state.checkedAt >= state.source.refreshMs || (!state.loaded && at - state.checkedAt >= RETRY_UNLOADED_MS);
}

/** Reads a provider's list into its state; a failure is logged once, while it lasts, and never thrown. */
async function readDiscovery(state: DiscoveryState, options: RegistryOptions): Promise<void> {
  const { source } = state;
  state.checkedAt = (options.now ?? Date.now)();
  try {
    const listed = await listUpstreamModels(source, options.fetch ?? globalFetch, state.capabilities);
    const next = listed.map((m) => discoveredModel(source, m, options));
    const changed = !state.loaded || next.map((m) => m.id).join("\n") !== state.models.map((m) => m.id).join("\n");
    state.models = next;
    state.loaded = true;
    if (changed || state.failing) options.log?.info("models listed by a provider", { provider: source.id, at: source.listUrl ?? source.baseUrl, models: next.map((m) => m.id) });
    state.failing = false;
  } catch (err) {
    if (!state.failing) {
      options.log?.[source.standIn ? "info" : "warn"]("could not list a provider's models", {
        provider: source.id,
        at: source.listUrl ?? source.baseUrl,
        err: err instanceof Error ? err.message : String(err),
      });
    }
    state.failing = true;
    if (source.dropOnFailure) state.models = [];
  }
}
