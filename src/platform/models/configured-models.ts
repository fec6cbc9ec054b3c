import { z } from "zod";
import { ANTHROPIC_BASE_URL, DISCOVERY_REFRESH_MS, type Catalog, type DiscoveryEntry, type ModelEntry } from "./catalog";

// ---------------------------------------------------------------------------------------
// MODELS: the operator's catalog, a JSON array of models and providers to discover. Parsed
// once at start; a bad entry stops the start with a message naming the entry and the field.
// See docs/chat.md ("Models as configuration").
// ---------------------------------------------------------------------------------------

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;
const Id = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters")
  .regex(ID_PATTERN, "must start with a letter or digit and hold only letters, digits and . _ : / @ + -");

const HttpUrl = z.string({ error: "must be a string" }).refine((v) => {
  try {
    return /^https?:$/.test(new URL(v).protocol);
  } catch {
    return false;
  }
}, "must be an absolute http:// or https:// URL");

const FIELDS =
  "id, name, description, provider, protocol, baseUrl, apiKeyEnv, upstream, credits, contextWindow, images, tools, fallbacks, default, speed, discover, prefix, inputPricePerMillion, outputPricePerMillion";

const EntrySchema = z.strictObject(
  {
    id: Id,
    name: z.string({ error: "must be a string" }).min(1, "must not be empty").max(100, "must be at most 100 characters").optional(),
    description: z.string({ error: "must be a string" }).max(1000, "must be at most 1000 characters").optional(),
    provider: z.string({ error: "must be a string" }).min(1, "must not be empty").max(100, "must be at most 100 characters").optional(),
    protocol: z.enum(["openai", "anthropic", "workers-ai"], { error: "must be openai (any OpenAI-compatible server), anthropic or workers-ai" }),
    baseUrl: HttpUrl.optional(),
    apiKeyEnv: z
      .string({ error: "must be a string" })
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be the name of an environment variable, e.g. HOUSE_KEY")
      .optional(),
    upstream: z.string({ error: "must be a string" }).min(1, "must not be empty").max(300, "must be at most 300 characters").optional(),
    credits: z.number({ error: "must be a number" }).int("must be a whole number").min(1, "must be 1 or more").max(1_000_000, "must be at most 1000000").optional(),
    contextWindow: z.number({ error: "must be a number" }).int("must be a whole number").min(256, "must be at least 256 tokens").max(100_000_000).optional(),
    images: z.boolean({ error: "must be true or false" }).optional(),
    tools: z.boolean({ error: "must be true or false" }).optional(),
    fallbacks: z.array(Id, { error: "must be a list of model ids" }).max(10, "must name at most 10 models").optional(),
    default: z.boolean({ error: "must be true or false" }).optional(),
    speed: z.enum(["fast", "medium", "slow"], { error: "must be fast, medium or slow" }).optional(),
    inputPricePerMillion: z.number({ error: "must be a number" }).min(0, "must be 0 or more").max(1_000_000).optional(),
    outputPricePerMillion: z.number({ error: "must be a number" }).min(0, "must be 0 or more").max(1_000_000).optional(),
    discover: z.boolean({ error: "must be true or false" }).optional(),
    prefix: z.string({ error: "must be a string" }).max(50, "must be at most 50 characters").regex(/^[A-Za-z0-9._:/@+-]*$/, "must hold only letters, digits and . _ : / @ + -").optional(),
  },
  { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown field; the fields are ${FIELDS}` : "must be an object") },
).superRefine((entry, ctx) => {
  const refuse = (field: string, message: string) => ctx.addIssue({ code: "custom", path: [field], message });
  if (entry.protocol === "openai" && !entry.baseUrl) refuse("baseUrl", "is required for protocol openai (the server's API base, ending in /v1)");
  if (entry.protocol === "anthropic" && !entry.apiKeyEnv) refuse("apiKeyEnv", "is required for protocol anthropic (the variable holding the API key)");
  if (entry.protocol === "workers-ai") {
    for (const field of ["baseUrl", "apiKeyEnv"] as const) if (entry[field] !== undefined) refuse(field, "does not apply to protocol workers-ai (the AI binding)");
    if (entry.discover) refuse("discover", "does not apply to protocol workers-ai");
    // The binding's text generation is relayed as text only.
    if (entry.images) refuse("images", "must be false for protocol workers-ai: images are not relayed to the binding");
    if (entry.tools) refuse("tools", "must be false for protocol workers-ai: tools are not relayed to the binding");
  }
  if (entry.discover) {
    if (entry.upstream !== undefined) refuse("upstream", "does not apply with discover: each model listed upstream keeps its own name");
    if (entry.default) refuse("default", "does not apply with discover: mark one model as the default");
    if (entry.speed !== undefined) refuse("speed", "does not apply with discover");
  } else if (entry.prefix !== undefined) {
    refuse("prefix", "applies only with discover: true");
  }
});

type Entry = z.infer<typeof EntrySchema>;

/** The configuration failed: `problems` name the entry and the field of each. */
export class CatalogError extends Error {
  override name = "CatalogError";
}

/**
 * Parses MODELS (`source` names where the text came from, for messages) into the catalog,
 * reading each entry's key from the variable its apiKeyEnv names in `vars`. Throws a
 * CatalogError listing every problem as `MODELS[2] (house-fast).baseUrl: …`.
 */
export function parseModels(text: string, source: string, vars: Record<string, string | undefined>): Catalog {
  const raw = parseArray(text, source);
  const label = (i: number) => {
    const id = (raw as Array<{ id?: unknown }>)[i]?.id;
    return `${source}[${i}]${typeof id === "string" && id.length <= 100 ? ` (${id})` : ""}`;
  };
  const entries = parseEntries(raw, label);
  const problems = [...duplicateIds(entries, label), ...extraDefaults(entries, label), ...unknownFallbacks(entries, label, source)];
  if (problems.length > 0) throw new CatalogError(problems.join("; "));
  return toCatalog(entries, vars);
}

/** The text as a JSON array that is not empty. */
function parseArray(text: string, source: string): unknown[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CatalogError(`${source} is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!Array.isArray(raw)) throw new CatalogError(`${source} must be a JSON array of models, e.g. [{"id":"house-fast","protocol":"openai",…}]`);
  if (raw.length === 0) throw new CatalogError(`${source} must list at least one model`);
  return raw;
}

/** Each item checked on its own; any problem of any item throws them all. */
function parseEntries(raw: unknown[], label: (i: number) => string): Entry[] {
  const problems: string[] = [];
  const entries: Entry[] = [];
  raw.forEach((item, i) => {
    const parsed = EntrySchema.safeParse(item);
    if (parsed.success) entries.push(parsed.data);
    else {
      for (const issue of parsed.error.issues) {
        const fields = issue.code === "unrecognized_keys" ? issue.keys.map((k) => [...issue.path, k]) : [issue.path];
        for (const path of fields) problems.push(`${label(i)}${path.length > 0 ? `.${path.join(".")}` : ""}: ${issue.message}`);
      }
    }
  });
  if (problems.length > 0) throw new CatalogError(problems.join("; "));
  return entries;
}

// Across entries: ids unique, one default at most, fallbacks that name a model.

function duplicateIds(entries: Entry[], label: (i: number) => string): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  entries.forEach((entry, i) => {
    const before = seen.get(entry.id);
    if (before !== undefined) problems.push(`${label(i)}.id: is already the id of ${label(before)}`);
    seen.set(entry.id, i);
  });
  return problems;
}

function extraDefaults(entries: Entry[], label: (i: number) => string): string[] {
  const defaults = entries.flatMap((e, i) => (e.default ? [i] : []));
  return defaults.length > 1 ? [`${label(defaults[1]!)}.default: only one model may be the default, and ${label(defaults[0]!)} already is`] : [];
}

/** Fallbacks that name neither a configured model nor one under a discovering entry's prefix. */
function unknownFallbacks(entries: Entry[], label: (i: number) => string, source: string): string[] {
  const problems: string[] = [];
  const prefixes = entries.filter((e) => e.discover).map((e) => e.prefix ?? `${e.id}/`);
  const staticIds = new Set(entries.filter((e) => !e.discover).map((e) => e.id));
  entries.forEach((entry, i) => {
    entry.fallbacks?.forEach((id, j) => {
      if (id === entry.id) problems.push(`${label(i)}.fallbacks[${j}]: a model cannot fall back to itself`);
      else if (!staticIds.has(id) && !prefixes.some((p) => p !== "" && id.startsWith(p))) {
        problems.push(`${label(i)}.fallbacks[${j}]: names no model of ${source} ('${id}')`);
      }
    });
  });
  return problems;
}

/** The checked entries as the catalog: models configured one by one, and providers to discover. */
function toCatalog(entries: Entry[], vars: Record<string, string | undefined>): Catalog {
  const defaultId = entries.find((e) => e.default)?.id ?? entries.find((e) => !e.discover)?.id;
  const models: ModelEntry[] = [];
  const discover: DiscoveryEntry[] = [];
  for (const entry of entries) {
    if (entry.discover) discover.push(discoveryEntry(entry, vars));
    else models.push(modelEntry(entry, vars, entry.id === defaultId));
  }
  return { configured: true, models, discover };
}

function discoveryEntry(entry: Entry, vars: Record<string, string | undefined>): DiscoveryEntry {
  const setup = setupOf(entry, vars);
  return {
    id: entry.id,
    prefix: entry.prefix ?? `${entry.id}/`,
    description: entry.description ?? `A model listed by ${providerOf(entry)}.`,
    provider: providerOf(entry),
    protocol: entry.protocol as "openai" | "anthropic",
    listing: entry.protocol as "openai" | "anthropic",
    baseUrl: baseUrlOf(entry)!,
    apiKey: keyOf(entry, vars),
    ...(setup ? { setup } : {}),
    ...terms(entry),
    refreshMs: DISCOVERY_REFRESH_MS,
    dropOnFailure: false,
    standIn: false,
  };
}

function modelEntry(entry: Entry, vars: Record<string, string | undefined>, isDefault: boolean): ModelEntry {
  const setup = setupOf(entry, vars);
  const baseUrl = baseUrlOf(entry);
  return {
    id: entry.id,
    name: entry.name ?? entry.id,
    description: entry.description ?? "",
    provider: providerOf(entry),
    protocol: entry.protocol,
    ...(baseUrl ? { baseUrl } : {}),
    apiKey: keyOf(entry, vars),
    upstream: entry.upstream ?? entry.id,
    ...terms(entry),
    default: isDefault,
    ...(entry.speed ? { speed: entry.speed } : {}),
    ...(entry.inputPricePerMillion === undefined ? {} : { inputPricePerMillion: entry.inputPricePerMillion }),
    ...(entry.outputPricePerMillion === undefined ? {} : { outputPricePerMillion: entry.outputPricePerMillion }),
    ...(entry.protocol === "workers-ai" ? { setup: "bind Workers AI as AI (wrangler.toml: [ai] binding = \"AI\")" } : setup ? { setup } : {}),
  };
}

function baseUrlOf(entry: Entry): string | undefined {
  return entry.protocol === "anthropic" ? (entry.baseUrl ?? ANTHROPIC_BASE_URL) : entry.baseUrl;
}

function keyOf(entry: Entry, vars: Record<string, string | undefined>): string | undefined {
  const value = entry.apiKeyEnv ? vars[entry.apiKeyEnv]?.trim() : undefined;
  return value ? value : undefined;
}

function setupOf(entry: Entry, vars: Record<string, string | undefined>): string | undefined {
  return entry.apiKeyEnv && !keyOf(entry, vars) ? `set ${entry.apiKeyEnv}` : undefined;
}

function providerOf(entry: Entry): string {
  return entry.provider ?? (entry.protocol === "openai" ? new URL(entry.baseUrl!).hostname : entry.protocol);
}

function terms(entry: Entry) {
  return {
    credits: entry.credits ?? 1,
    contextWindow: entry.contextWindow ?? 8192,
    images: entry.images ?? false,
    tools: entry.tools ?? false,
    fallbacks: entry.fallbacks ?? [],
  };
}
