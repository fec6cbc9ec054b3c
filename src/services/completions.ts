import type { Principal } from "../auth/credentials";
import { encodeBase64url, sha256Hex } from "../auth/encoding";
import { ApiError } from "../errors";
import type { ChatMessage, ModelOutcome, Sampling } from "../models/adapter";
import type { ModelRegistry, RegisteredModel } from "../models/registry";
import {
  estimateTokens,
  openExchange,
  startChat,
  type ChatDeps,
  type ChatReply,
  type ChatStart,
  type Exchange,
  type ModelCallOptions,
} from "./chat";
import type { Credits } from "./credits";

// ---------------------------------------------------------------------------------------
// Chat completions for the OpenAI-compatible surface: the chat core over the messages the
// caller sends, or, with a context id, over that context's stored history.
// ---------------------------------------------------------------------------------------

type ErrorStatus = ConstructorParameters<typeof ApiError>[0];

/** An error that names OpenAI's `code` for it and the request field (`param`) it concerns. */
export class OpenAiApiError extends ApiError {
  constructor(
    status: ErrorStatus,
    message: string,
    readonly code: string | null,
    readonly param: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(status, message, headers);
  }
}

/** A completion as stored for replays and shaped into OpenAI's reply by the route. */
export interface Completion {
  /** `chatcmpl-…` */
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  content: string;
  finishReason: NonNullable<ModelOutcome["finishReason"]>;
  /** The provider's counts when it reports them, else an estimate. */
  usage: { promptTokens: number; completionTokens: number };
  /** The context the exchange was stored in, if one was named. */
  contextId: string | null;
  credits: Omit<Credits, "day">;
}

export interface CompletionInput {
  principal: Principal;
  modelId: string;
  /** The conversation; with `contextId`, its system messages and its last (user) message. */
  messages: ChatMessage[];
  sampling: Sampling;
  /** Continue this stored context: its history replaces the given earlier turns. */
  contextId?: string;
  idempotencyKey?: string;
  requestId: string;
}

export type CompletionStart =
  | { kind: "replay"; completion: Completion }
  | {
      kind: "ready";
      exchange: Exchange;
      id: string;
      created: number;
      model: string;
      /** What the model receives. */
      prompt: ChatMessage[];
      /** For Exchange.complete / stream: the sampling settings, and where the outcome goes. */
      callOptions: ModelCallOptions;
      /** Settles the exchange (one batch, storing it in the context if one was named). */
      finish(content: string): Promise<Completion>;
    };

/** The model a request names; an unknown one is 404 `model_not_found`, as OpenAI answers. */
export function knownModel(models: ModelRegistry, id: string): RegisteredModel {
  const model = models.get(id);
  if (model) return model;
  const offered = models.list().filter((m) => m.available).map((m) => m.id);
  throw new OpenAiApiError(
    404,
    `model '${id}' does not exist${offered.length > 0 ? `; available models: ${offered.join(", ")}` : ""} (GET /v1/models lists them)`,
    "model_not_found",
    "model",
  );
}

/** The models a caller can use now, for GET /v1/models. */
export function availableModels(models: ModelRegistry): RegisteredModel[] {
  return models.list().filter((m) => m.available);
}

/**
 * Opens a completion: checks the model (404 unknown, 503 not configured), then debits
 * through the chat core (402 with no credits left). Nothing is charged on any refusal.
 */
export async function startCompletion(deps: ChatDeps, input: CompletionInput): Promise<CompletionStart> {
  knownModel(deps.models, input.modelId);
  const fingerprint = await sha256Hex(
    JSON.stringify(["POST /v1/chat/completions", input.modelId, input.messages, input.sampling, input.contextId ?? null]),
  );
  return input.contextId === undefined ? startStateless(deps, input, fingerprint) : startInContext(deps, input, input.contextId, fingerprint);
}

async function startStateless(deps: ChatDeps, input: CompletionInput, fingerprint: string): Promise<CompletionStart> {
  const idempotency = input.idempotencyKey ? { key: input.idempotencyKey, fingerprint } : undefined;
  const opened = await openExchange(deps, { principal: input.principal, modelId: input.modelId, idempotency, requestId: input.requestId });
  if (opened.kind === "replay") return { kind: "replay", completion: opened.body as Completion };

  const { exchange } = opened;
  const tracker = trackOutcome(input.sampling);
  const meta = { id: completionId(), created: unixSeconds(exchange.at), model: exchange.model.id };
  return {
    kind: "ready",
    exchange,
    ...meta,
    prompt: input.messages,
    callOptions: tracker.callOptions,
    async finish(content) {
      const completion = build(meta, content, tracker.outcome, input.messages, null, exchange.credits);
      await exchange.settle({ contextId: null, reply: { status: 200, body: completion } });
      return completion;
    },
  };
}

/**
 * With a context: the last message is the new user message, the context's stored history
 * (as much as fits) stands in for the earlier turns, and the caller's system messages go
 * first. The exchange is stored in the context, as POST /chat/send stores it.
 */
async function startInContext(deps: ChatDeps, input: CompletionInput, contextId: string, fingerprint: string): Promise<CompletionStart> {
  const system = input.messages.filter((m) => m.role === "system");
  const message = input.messages.at(-1)!.content;
  let start: ChatStart;
  try {
    start = await startChat(deps, {
      principal: input.principal,
      message,
      modelId: input.modelId,
      contextId,
      idempotencyKey: input.idempotencyKey,
      fingerprint,
      requestId: input.requestId,
    });
  } catch (err) {
    throw asContextError(err);
  }
  if (start.kind === "replay") return { kind: "replay", completion: fromChatReply(start.body, message, deps.now()) };

  const { exchange } = start;
  const prompt = [...system, ...start.prompt];
  const tracker = trackOutcome(input.sampling);
  const meta = { id: completionId(), created: unixSeconds(exchange.at), model: exchange.model.id };
  const chat = start;
  return {
    kind: "ready",
    exchange,
    ...meta,
    prompt,
    callOptions: tracker.callOptions,
    async finish(content) {
      let reply: ChatReply;
      try {
        reply = await chat.finish(content);
      } catch (err) {
        throw asContextError(err);
      }
      return build(meta, content, tracker.outcome, prompt, reply.contextId, reply.credits);
    },
  };
}

/** A 404 from the chat core here is always about the context. */
function asContextError(err: unknown): unknown {
  if (err instanceof ApiError && err.status === 404 && !(err instanceof OpenAiApiError)) {
    return new OpenAiApiError(404, err.message, "context_not_found", "context_id", err.headers);
  }
  return err;
}

function trackOutcome(sampling: Sampling) {
  const tracker: { outcome: ModelOutcome; callOptions: ModelCallOptions } = {
    outcome: {},
    callOptions: { sampling, onOutcome: (outcome) => void (tracker.outcome = outcome) },
  };
  return tracker;
}

function build(
  meta: { id: string; created: number; model: string },
  content: string,
  outcome: ModelOutcome,
  prompt: ChatMessage[],
  contextId: string | null,
  credits: Omit<Credits, "day"> | Credits,
): Completion {
  const { day: _day, ...withoutDay } = credits as Credits;
  return {
    ...meta,
    content,
    finishReason: outcome.finishReason ?? "stop",
    usage: outcome.usage ?? estimateUsage(prompt, content),
    contextId,
    credits: withoutDay,
  };
}

/** A replay of a context completion: its stored reply, under a fresh id. */
function fromChatReply(reply: ChatReply, message: string, at: Date): Completion {
  return {
    id: completionId(),
    created: unixSeconds(at),
    model: reply.model,
    content: reply.response,
    finishReason: "stop",
    usage: estimateUsage([{ role: "user", content: message }], reply.response),
    contextId: reply.contextId,
    credits: reply.credits,
  };
}

function estimateUsage(prompt: ChatMessage[], content: string) {
  return {
    promptTokens: prompt.reduce((sum, m) => sum + estimateTokens(m.content), 0),
    completionTokens: Math.ceil(content.length / 3),
  };
}

function completionId(): string {
  return `chatcmpl-${encodeBase64url(crypto.getRandomValues(new Uint8Array(18)))}`;
}

function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
