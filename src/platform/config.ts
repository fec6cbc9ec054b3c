import { z } from "zod";
import { builtInCatalog, type Catalog } from "./models/catalog";
import { CatalogError, parseModels } from "./models/configured-models";
import { parseAdmins, type Admins } from "./admins";
import { builtInPlans, parsePlans, PlansError, type Plans } from "./plans";

const optionalText = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .optional();

function isAbsoluteUrl(text: string): boolean {
  try {
    return Boolean(new URL(text));
  } catch {
    return false;
  }
}

const optionalUrl = (what: string) =>
  optionalText.refine((v) => v === undefined || isAbsoluteUrl(v), { message: `must be an absolute URL (${what})` });

/** Model endpoints: an http(s) URL, so that `localhost:11434` fails here, not at the first chat. */
const httpUrl = (what: string) =>
  optionalUrl(what).refine((v) => v === undefined || /^https?:\/\//i.test(v), { message: `must start with http:// or https:// (${what})` });

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** `svc-70b=1,claude-sonnet-4=3`: per-model credit prices overriding the catalog's (ids are checked against it later). */
function parseModelCredits(text: string | undefined, ctx: z.RefinementCtx): Record<string, number> {
  const prices: Record<string, number> = {};
  for (const entry of (text ?? "").split(",").map((e) => e.trim()).filter(Boolean)) {
    const match = /^([^=\s]+)\s*=\s*(\d+)$/.exec(entry);
    if (!match || Number(match[2]) < 1) {
      ctx.addIssue({ code: "custom", message: `must be model=credits pairs with whole credits of 1 or more, not '${entry}'` });
    } else {
      prices[match[1]!] = Number(match[2]);
    }
  }
  return prices;
}

/**
 * Hosts the pages may show avatars from (their CSP's img-src): the identity providers'
 * picture hosts, whose logs nobody who writes a model's reply can read. Any other picture
 * is not loaded: a host that saw the page's requests could learn what a reply put in a URL.
 */
export const DEFAULT_AVATAR_HOSTS = "https://lh3.googleusercontent.com https://avatars.githubusercontent.com https://secure.gravatar.com";

/** `https://a.example https://*.b.example`, or `none`: https origins, `*.` for every subdomain. */
function parseAvatarHosts(text: string, ctx: z.RefinementCtx): string[] {
  const entries = text.split(/[\s,]+/).filter(Boolean);
  if (entries.length === 1 && entries[0] === "none") return [];
  for (const entry of entries) {
    if (!/^https:\/\/(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::\d{1,5})?$/i.test(entry)) {
      ctx.addIssue({ code: "custom", message: `must be https origins such as https://avatars.example.com (or none), not '${entry}'` });
    }
  }
  return entries;
}

/**
 * The environment, as the README's Configuration section documents it. Parsed once per process
 * (Node) or per isolate
 * (Workers); a bad value is a startup error that names the variable.
 */
const ConfigSchema = z.object({
  NODE_ENV: optionalText,
  // 0 asks the system for a free port (tests); the server logs the one it got.
  PORT: z.coerce.number().int().min(0).max(65535, "must be a TCP port (0..65535)").default(8787),
  DATABASE_URL: optionalText,
  DATABASE_AUTH_TOKEN: optionalText,
  AUTH_JWKS_URL: optionalUrl("the identity provider's JWKS"),
  AUTH_PUBLIC_KEY: optionalText,
  AUTH_HS256_SECRET: optionalText.refine((v) => v === undefined || v.length >= 32, {
    message: "must be at least 32 characters",
  }),
  AUTH_ISSUER: optionalText,
  AUTH_AUDIENCE: optionalText,
  // OpenID Connect: the browser client logs in at the issuer; the API finds its JWKS by discovery.
  AUTH_OIDC_ISSUER: httpUrl("the OpenID Connect issuer"),
  AUTH_OIDC_CLIENT_ID: optionalText,
  AUTH_OIDC_SCOPES: optionalText.transform((v) => v ?? "openid profile email"),
  AUTH_OIDC_AUDIENCE: optionalText,
  // How long the identity provider's keys are used before they are fetched again: a rotated
  // key is picked up within this time (a token signed with an unknown key fetches at once).
  AUTH_KEYS_MAX_AGE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  // The button of the identity provider on the login screen: "Continue with <name>".
  AUTH_PROVIDER_NAME: optionalText,
  // The service's own sessions (POST /auth/session): the key that signs their access tokens
  // (a private EC P-256 JWK, or a JWKS of them, the first signing); on Node unset means a key
  // kept in the data folder. The access tokens' lifetime, and how long an unused session lasts.
  SESSION_SIGNING_KEY: optionalText,
  SESSION_ACCESS_TOKEN_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  SESSION_IDLE_DAYS: z.coerce.number().int().min(1).max(400).default(30),
  // Sign-In with Ethereum: on unless turned off; Ethereum JSON-RPC nodes (one per chain,
  // comma-separated) through which smart-contract wallets' signatures are checked.
  WALLET_SIGN_IN: z.enum(["on", "off"], { error: "must be on or off" }).default("on"),
  WALLET_RPC_URL: z
    .string()
    .default("")
    .transform((v) => v.split(",").map((u) => u.trim()).filter(Boolean))
    .refine((urls) => urls.every((u) => /^https?:\/\//i.test(u) && isAbsoluteUrl(u)), {
      message: "must be http(s) URLs of Ethereum JSON-RPC nodes, comma-separated",
    }),
  // The local-login key handed to the Worker by `npm run dev` (a private JWK as JSON).
  LOCAL_LOGIN_PRIVATE_JWK: optionalText,
  // Where the Node server finds the built web client (relative to the working directory).
  WEB_DIST_DIR: optionalText,
  // Speech to text: an OpenAI-compatible /audio/transcriptions (OpenAI, Groq, a local Whisper).
  STT_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  STT_API_KEY: optionalText,
  STT_MODEL: optionalText.transform((v) => v ?? "whisper-1"),
  DAILY_CREDITS: positiveInt(500),
  SVC_MODEL_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  SVC_MODEL_API_KEY: optionalText,
  SVC_MODEL_UPSTREAM: optionalText.transform((v) => v ?? "llama-3.3-70b"),
  // The name people see for the service's own model (the picker, usage), e.g. "Qwen 2.5 7B":
  // whatever SVC_MODEL_BASE_URL really serves. Unset: "Service 70B".
  SVC_MODEL_NAME: optionalText,
  MODEL_TIMEOUT_MS: positiveInt(60_000),
  // A new context's title, asked of a model once its first reply is stored: `on` where people
  // see it (sign-ins, not API keys), `all` (API keys too), or `off`; TITLE_MODEL names the
  // model asked (a catalog id), else the one that answered.
  TITLES: z.enum(["on", "all", "off"], { error: "must be on, all or off" }).default("on"),
  TITLE_MODEL: optionalText,
  // svc-70b on Workers when SVC_MODEL_BASE_URL is unset and the AI binding is bound.
  SVC_MODEL_WORKERS_AI: optionalText.transform((v) => v ?? "@cf/meta/llama-3.3-70b-instruct-fp8-fast"),
  // Third-party providers: each is enabled by its key (or, for local servers, its base URL).
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  GROQ_API_KEY: optionalText,
  GROQ_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  TOGETHER_API_KEY: optionalText,
  TOGETHER_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  OPENROUTER_API_KEY: optionalText,
  OPENROUTER_BASE_URL: httpUrl("an OpenAI-compatible base URL ending in /v1"),
  ANTHROPIC_API_KEY: optionalText,
  ANTHROPIC_BASE_URL: httpUrl("the Anthropic API origin"),
  MODEL_CREDITS: optionalText.transform((v, ctx) => parseModelCredits(v, ctx)),
  // The operator's catalog (JSON), or on Node a file holding it; unset: the built-in catalog.
  MODELS: optionalText,
  MODELS_FILE: optionalText,
  // A local Ollama, looked for by the Node server in local mode when no model is configured,
  // at start and every OLLAMA_REFRESH_SECONDS.
  OLLAMA_BASE_URL: httpUrl("Ollama's address, e.g. http://127.0.0.1:11434").transform((v) => v ?? "http://127.0.0.1:11434"),
  OLLAMA_REFRESH_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  PUBLIC_BASE_URL: optionalUrl("the base of share links"),
  AVATAR_HOSTS: z
    .string()
    .default(DEFAULT_AVATAR_HOSTS)
    .transform((v, ctx) => parseAvatarHosts(v.trim() || DEFAULT_AVATAR_HOSTS, ctx)),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  // Failed authentications per client address per minute (Node; Workers use the
  // AUTH_FAILURE_LIMITER binding's own limit). 0 turns the limit off on both.
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(30),
  // Node behind a reverse proxy: the header the proxy puts the client's address in
  // (its last comma-separated entry counts). Unset: the socket's peer address.
  CLIENT_IP_HEADER: optionalText.refine((v) => v === undefined || /^[A-Za-z0-9-]+$/.test(v), { message: "must be a header name" }),
  CORS_ORIGINS: z
    .string()
    .default("*")
    .transform((v) => v.split(",").map((o) => o.trim()).filter(Boolean)),
  // The Node server's listening address. Unset: loopback only (127.0.0.1) in local-login
  // mode, where a name is proof enough; every interface (0.0.0.0) with an identity provider.
  HOST: optionalText,
  // Local login: a bare name signs in only from this machine (loopback) unless `network`.
  LOCAL_LOGIN: z.enum(["loopback", "network"], { error: "must be loopback or network" }).default("loopback"),
  // Who may create an account (docs/api.md, "Who may sign up").
  SIGN_UP: z.enum(["open", "invite", "closed"], { error: "must be open, invite or closed" }).default("open"),
  // New accounts proved by this service alone (wallets, names) per client address per hour; 0: no limit.
  SIGN_UPS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(0).default(5),
  // Successful sign-ins per client address, and per identity, per minute (Node; Workers use
  // the SIGN_IN_*_LIMITER bindings' limits). 0 turns one off.
  SIGN_INS_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().min(0).default(20),
  SIGN_INS_PER_IDENTITY_PER_MINUTE: z.coerce.number().int().min(0).default(10),
  // The most live sessions a person holds: a new one past it ends the least recently used.
  SESSIONS_PER_USER: z.coerce.number().int().min(1).max(1000).default(50),
  // Cloudflare Turnstile in front of new accounts (both keys, or neither).
  TURNSTILE_SITE_KEY: optionalText,
  TURNSTILE_SECRET_KEY: optionalText,
  TURNSTILE_VERIFY_URL: httpUrl("Turnstile's siteverify endpoint").transform((v) => v ?? "https://challenges.cloudflare.com/turnstile/v0/siteverify"),
  // The operator's console: who is an admin (user ids, wallets, verified e-mails), and the
  // plans (JSON, or on Node a file).
  ADMINS: z.string().default(""),
  PLANS: optionalText,
  PLANS_FILE: optionalText,
  // The bearer token GET /metrics asks for (Node); unset, it answers loopback peers only.
  METRICS_TOKEN: optionalText.refine((v) => v === undefined || v.length >= 16, { message: "must be at least 16 characters" }),
  // The longest reply stored (characters); the rest is cut, with a note saying so.
  MAX_REPLY_CHARS: z.coerce.number().int().min(1000).max(10_000_000).default(200_000),
  // Attachments (POST /attachments): the largest image and document, in bytes, and how many
  // bytes of uploads one person may keep.
  MAX_IMAGE_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(10 * 1024 * 1024),
  MAX_DOCUMENT_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(20 * 1024 * 1024),
  ATTACHMENT_QUOTA_BYTES: z.coerce.number().int().min(0).default(200 * 1024 * 1024),
});

export type Config = Omit<z.infer<typeof ConfigSchema>, "ADMINS"> & {
  /** The models this deployment offers: MODELS, MODELS_FILE or the built-in catalog, with MODEL_CREDITS applied. */
  catalog: Catalog;
  /** ADMINS, parsed. */
  admins: Admins;
  /** PLANS, PLANS_FILE or the built-in plan. */
  plans: Plans;
};

export interface ParseOptions {
  /** Reads MODELS_FILE (Node); without it, MODELS_FILE is refused (Workers have no files). */
  readFile?: (path: string) => string;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment; throws a ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, unknown>, options: ParseOptions = {}): Config {
  // Workers bindings (D1, AI) share the env object with string vars: keep only strings.
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string")) as Record<string, string>;
  const parsed = ConfigSchema.safeParse(vars);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")} ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  const catalog = catalogOf(parsed.data, vars, options);
  const admins = parseAdmins(parsed.data.ADMINS);
  if (admins.problems.length > 0) throw new ConfigError(`invalid configuration: ADMINS: ${admins.problems.join("; ")}`);
  const config: Config = { ...parsed.data, catalog, admins: admins.admins, plans: plansOf(parsed.data, catalog, options) };
  const authSources = [config.AUTH_JWKS_URL, config.AUTH_PUBLIC_KEY, config.AUTH_HS256_SECRET, config.AUTH_OIDC_ISSUER].filter(Boolean);
  if (authSources.length > 1) {
    throw new ConfigError(
      "invalid configuration: set only one of AUTH_OIDC_ISSUER, AUTH_JWKS_URL, AUTH_PUBLIC_KEY and AUTH_HS256_SECRET",
    );
  }
  if (config.AUTH_OIDC_ISSUER && !config.AUTH_OIDC_CLIENT_ID) {
    throw new ConfigError("invalid configuration: AUTH_OIDC_CLIENT_ID is required with AUTH_OIDC_ISSUER (the web client's id at the issuer)");
  }
  if (config.AUTH_OIDC_ISSUER && config.AUTH_ISSUER && config.AUTH_ISSUER !== config.AUTH_OIDC_ISSUER) {
    throw new ConfigError("invalid configuration: AUTH_ISSUER differs from AUTH_OIDC_ISSUER; leave AUTH_ISSUER unset with OpenID Connect");
  }
  checkAudienceBound(config);
  if (Boolean(config.TURNSTILE_SITE_KEY) !== Boolean(config.TURNSTILE_SECRET_KEY)) {
    throw new ConfigError(
      `invalid configuration: set TURNSTILE_SITE_KEY and TURNSTILE_SECRET_KEY together (${config.TURNSTILE_SITE_KEY ? "TURNSTILE_SECRET_KEY" : "TURNSTILE_SITE_KEY"} is missing): the widget's site key and its secret, from Cloudflare's dashboard`,
    );
  }
  // Share links are built from it: in production the request's Host header must not decide them.
  if (config.NODE_ENV === "production" && !config.PUBLIC_BASE_URL) {
    throw new ConfigError("invalid configuration: PUBLIC_BASE_URL is required when NODE_ENV=production (the base of share links, e.g. https://chat.example.com)");
  }
  return config;
}

/**
 * Every token must name this service in its `aud`: a provider's keys sign tokens for all of
 * its apps, and without an audience any of them (another app's token for the same person)
 * would sign in here. OpenID Connect binds the client id at least (AUTH_OIDC_CLIENT_ID,
 * required with it); the other key sources need AUTH_AUDIENCE.
 */
function checkAudienceBound(config: Config): void {
  if (config.AUTH_OIDC_ISSUER || config.AUTH_AUDIENCE) return;
  const source = config.AUTH_JWKS_URL ? "AUTH_JWKS_URL" : config.AUTH_PUBLIC_KEY ? "AUTH_PUBLIC_KEY" : config.AUTH_HS256_SECRET ? "AUTH_HS256_SECRET" : undefined;
  if (!source) return;
  throw new ConfigError(
    `invalid configuration: AUTH_AUDIENCE is required with ${source}: set it to the audience your identity provider writes in the \`aud\` of tokens for this service (Privy: the app id; Auth0: the API identifier), so that tokens it issues to other apps are refused`,
  );
}

/** The catalog the variables choose, with MODEL_CREDITS applied; a ConfigError names the bad entry and field. */
function catalogOf(parsed: z.infer<typeof ConfigSchema>, vars: Record<string, string>, options: ParseOptions): Catalog {
  if (parsed.MODELS && parsed.MODELS_FILE) throw new ConfigError("invalid configuration: set MODELS or MODELS_FILE, not both");
  let catalog: Catalog;
  try {
    if (parsed.MODELS) catalog = parseModels(parsed.MODELS, "MODELS", vars);
    else if (parsed.MODELS_FILE) {
      if (!options.readFile) throw new CatalogError("MODELS_FILE is read by the Node server only; on Workers put the catalog in MODELS");
      let text: string;
      try {
        text = options.readFile(parsed.MODELS_FILE);
      } catch (err) {
        throw new CatalogError(`MODELS_FILE ${parsed.MODELS_FILE} cannot be read (${(err as { code?: string }).code ?? String(err)})`);
      }
      catalog = parseModels(text, `MODELS_FILE ${parsed.MODELS_FILE}`, vars);
    } else catalog = { configured: false, models: builtInCatalog(parsed), discover: [] };
  } catch (err) {
    if (err instanceof CatalogError) throw new ConfigError(`invalid configuration: ${err.message}`);
    throw err;
  }
  const ids = new Set(catalog.models.map((m) => m.id));
  const unknown = Object.keys(parsed.MODEL_CREDITS).filter((id) => !ids.has(id));
  if (unknown.length > 0) throw new ConfigError(`invalid configuration: MODEL_CREDITS names an unknown model '${unknown[0]}'`);
  for (const model of catalog.models) model.credits = parsed.MODEL_CREDITS[model.id] ?? model.credits;
  return catalog;
}

/** The plans the variables choose: PLANS, PLANS_FILE (Node) or the built-in one; a ConfigError names the bad entry and field. */
function plansOf(parsed: z.infer<typeof ConfigSchema>, catalog: Catalog, options: ParseOptions): Plans {
  if (parsed.PLANS && parsed.PLANS_FILE) throw new ConfigError("invalid configuration: set PLANS or PLANS_FILE, not both");
  const modelIds = catalog.discover.length > 0 ? undefined : new Set(catalog.models.map((m) => m.id));
  try {
    if (parsed.PLANS) return parsePlans(parsed.PLANS, "PLANS", modelIds);
    if (parsed.PLANS_FILE) {
      if (!options.readFile) throw new PlansError("PLANS_FILE is read by the Node server only; on Workers put the plans in PLANS");
      let text: string;
      try {
        text = options.readFile(parsed.PLANS_FILE);
      } catch (err) {
        throw new PlansError(`PLANS_FILE ${parsed.PLANS_FILE} cannot be read (${(err as { code?: string }).code ?? String(err)})`);
      }
      return parsePlans(text, `PLANS_FILE ${parsed.PLANS_FILE}`, modelIds);
    }
  } catch (err) {
    if (err instanceof PlansError) throw new ConfigError(`invalid configuration: ${err.message}`);
    throw err;
  }
  return builtInPlans(parsed.DAILY_CREDITS);
}
