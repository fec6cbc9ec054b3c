import type { Principal } from "../../platform/auth/principal";
import { encodeBase64url, sha256Hex } from "../../platform/encoding";
import { excerpt } from "../../platform/errors";
import { ModelLacksCapability, ModelNotFound } from "./errors";
import { textOf, type ChatMessage, type ModelOutcome, type ModelTooling, type Sampling, type ToolCall } from "../../platform/models/adapter";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { estimateTokens, openChat, type ChatOpening, type ChatReply } from "./send";
import { replayTurn, type ChatDeps, type Exchange, type ModelCallOptions, type Turn } from "./exchange";
import { openExchange } from "./opening";
import type { Credits } from "../account/credits";

// ---------------------------------------------------------------------------------------
// Chat completions for the OpenAI-compatible surface: the chat core over the messages the
// caller sends, or, with a context id, over that context's stored history.
// ---------------------------------------------------------------------------------------

/** A completion as stored for replays and shaped into OpenAI's reply by the route. */
export interface Completion {
  /** `chatcmpl-…` */
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  content: string;
  /** The model's calls to the request's tools, if it made any. */
  toolCalls?: ToolCall[];
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
  /** Tools, tool choice and response format, relayed to the model. */
  tooling?: ModelTooling;
  /** Continue this stored context: its history replaces the given earlier turns. */
  contextId?: string;
  idempotencyKey?: string;
  requestId: string;
}

/** The model a request names; an unknown one is `model_not_found` (which /v1 answers 404, as OpenAI does). */
export function knownModel(models: ModelRegistry, id: string): RegisteredModel {
  const model = models.get(id);
  if (model) return model;
  const offered = models.list().filter((m) => m.available).map((m) => m.id);
  throw new ModelNotFound(
    `model '${excerpt(id)}' does not exist${offered.length > 0 ? `; available models: ${offered.join(", ")}` : ""} (GET /v1/models lists them)`,
  );
}

/**
 * What the request asks of the model beyond text, checked against what it takes: tools
 * (and a conversation holding tool calls), images, a JSON reply. A 400 naming the model.
 */
export function requireCapabilities(model: RegisteredModel, messages: ChatMessage[], tooling: ModelTooling = {}): void {
  const lacking = lackingCapability(model, messages, tooling);
  if (lacking) throw new ModelLacksCapability(model.id, lacking.what, lacking.field);
}

/** What of the request the model does not take, if anything: a fallback must take it all. */
function lackingCapability(model: RegisteredModel, messages: ChatMessage[], tooling: ModelTooling): { what: "tools" | "images" | "json"; field: string } | undefined {
  if (!model.tools) {
    if (tooling.tools && tooling.tools.length > 0) return { what: "tools", field: "tools" };
    const i = messages.findIndex((m) => m.role === "tool" || (m.toolCalls && m.toolCalls.length > 0));
    if (i >= 0) return { what: "tools", field: `messages[${i}]` };
  }
  if (!model.images) {
    const i = messages.findIndex((m) => typeof m.content !== "string" && m.content.some((p) => p.type === "image"));
    if (i >= 0) return { what: "images", field: `messages[${i}].content` };
  }
  const format = tooling.responseFormat?.type;
  if (format && format !== "text" && model.protocol === "workers-ai") return { what: "json", field: "response_format" };
  return undefined;
}

/** The models a caller can use now, for GET /v1/models. */
export function availableModels(models: ModelRegistry): RegisteredModel[] {
  return models.list().filter((m) => m.available);
}

/** The meta of a completion, known from the start: its chunks carry it. */
export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

export type CompletionTurn = Turn<Completion> & { meta: CompletionMeta };

/**
 * A chat completion from the debit to the stored reply: checks the model (404 unknown,
 * 503 not configured), then debits through the exchange core (402 with no credits left).
 * Nothing is charged on any refusal.
 */
export async function sendCompletion(deps: ChatDeps, input: CompletionInput): Promise<CompletionTurn> {
  requireCapabilities(knownModel(deps.models, input.modelId), input.messages, input.tooling);
  const fingerprint = await sha256Hex(
    JSON.stringify(["POST /v1/chat/completions", input.modelId, input.messages, input.sampling, input.contextId ?? null, ...(input.tooling && Object.keys(input.tooling).length > 0 ? [input.tooling] : [])]),
  );
  return input.contextId === undefined ? sendStateless(deps, input, fingerprint) : sendInContext(deps, input, input.contextId, fingerprint);
}

async function sendStateless(deps: ChatDeps, input: CompletionInput, fingerprint: string): Promise<CompletionTurn> {
  const idempotency = input.idempotencyKey ? { key: input.idempotencyKey, fingerprint } : undefined;
  const opened = await openExchange(deps, {
    principal: input.principal,
    modelId: input.modelId,
    idempotency,
    requestId: input.requestId,
    suits: (m) => !lackingCapability(m, input.messages, input.tooling ?? {}),
  });
  if (opened.kind === "replay") return replayed(opened.body, textOf(input.messages.at(-1)?.content ?? ""), deps.now());

  const { exchange } = opened;
  const tracker = trackOutcome(input.sampling, input.tooling);
  const meta = { id: completionId(), created: unixSeconds(exchange.at), model: exchange.model.id };
  return {
    replayed: false,
    credits: exchange.credits,
    creditsAfter: (model) => exchange.creditsAfter(model),
    meta,
    events: (signal, stream) =>
      exchange.run({
        prompt: input.messages,
        signal,
        stream,
        callOptions: tracker.callOptions,
        settle: (content, model) => ({
          contextId: null,
          reply: build({ ...meta, model: model.id }, content, tracker.outcome, input.messages, null, creditsAfter(exchange, model)),
        }),
      }),
  };
}

/**
 * With a context: the last message is the new user message, the context's active branch
 * (as much as fits) stands in for the earlier turns, and the context's instructions, then
 * the caller's system messages, go first. The exchange is stored at the end of the active
 * branch, as POST /chat/send stores it.
 */
async function sendInContext(deps: ChatDeps, input: CompletionInput, contextId: string, fingerprint: string): Promise<CompletionTurn> {
  const system = input.messages.filter((m) => m.role === "system");
  const message = textOf(input.messages.at(-1)!.content);
  const opening: ChatOpening = await openChat(deps, {
      principal: input.principal,
      message,
      modelId: input.modelId,
      contextId,
      idempotencyKey: input.idempotencyKey,
      fingerprint,
      requestId: input.requestId,
    });
  if (opening.kind === "replay") return replayed(opening.body, message, deps.now());

  const { exchange } = opening;
  const chat = opening;
  // The context's instructions first, then the caller's system messages, the branch, the message.
  const [head, ...rest] = chat.prompt;
  const prompt = head?.role === "system" ? [head, ...system, ...rest] : [...system, ...chat.prompt];
  const tracker = trackOutcome(input.sampling, input.tooling);
  const meta = { id: completionId(), created: unixSeconds(exchange.at), model: exchange.model.id };
  return {
    replayed: false,
    credits: exchange.credits,
    creditsAfter: (model) => exchange.creditsAfter(model),
    meta,
    events: (signal, stream) =>
      exchange.run({
        prompt,
        signal,
        stream,
        callOptions: tracker.callOptions,
        settle(content, model) {
          const stored = chat.settle(content, model);
          return { ...stored, reply: build({ ...meta, model: model.id }, content, tracker.outcome, prompt, stored.contextId, stored.reply.credits) };
        },
        explainStoreFailure: (err) => chat.explainStoreFailure(err),
      }),
  };
}

/** A stored reply: a completion, or a context's chat reply (stored so before this version). */
function replayed(body: unknown, message: string, at: Date): CompletionTurn {
  const completion = "response" in (body as object) ? fromChatReply(body as ChatReply, message, at) : (body as Completion);
  return { ...replayTurn(completion, completion.content, completion.credits, completion.model), meta: completion };
}

/** The day's credits once the hold is settled at the answering model's price. */
function creditsAfter(exchange: Exchange, model: RegisteredModel): Credits {
  return exchange.creditsAfter(model.id);
}

function trackOutcome(sampling: Sampling, tooling: ModelTooling = {}) {
  const tracker: { outcome: ModelOutcome; callOptions: ModelCallOptions } = {
    outcome: {},
    callOptions: { sampling, ...tooling, onOutcome: (outcome) => void (tracker.outcome = outcome) },
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
    ...(outcome.toolCalls && outcome.toolCalls.length > 0 ? { toolCalls: outcome.toolCalls } : {}),
    finishReason: outcome.finishReason ?? (outcome.toolCalls && outcome.toolCalls.length > 0 ? "tool_calls" : "stop"),
    usage: outcome.usage ?? estimateUsage(prompt, content + (outcome.toolCalls ?? []).map((c) => c.name + c.arguments).join("")),
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
    promptTokens: prompt.reduce((sum, m) => sum + estimateTokens(textOf(m.content)), 0),
    completionTokens: Math.ceil(content.length / 3),
  };
}

function completionId(): string {
  return `chatcmpl-${encodeBase64url(crypto.getRandomValues(new Uint8Array(18)))}`;
}

function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
