import type { Principal } from "../../platform/auth/principal";
import { encodeBase64url, sha256Hex } from "../../platform/encoding";
import { excerpt } from "../../platform/errors";
import { ModelLacksCapability, ModelNotFound } from "./errors";
import { textOf, type ChatMessage, type ModelOutcome, type ModelTooling, type Sampling, type ToolCall } from "../../platform/models/adapter";
import type { ModelRegistry, RegisteredModel } from "../../platform/models/registry";
import { estimateTokens, messageTokens } from "../../platform/models/tokens";
import type { Credits } from "../account/credits";
import { answer, askedModel, creditsAfter, store, type AnswerRequest, type ChatDeps, type Exchange } from "./exchange";
import type { ModelAnswer, ModelEvent } from "./model-call";
import { openExchange } from "./opening";
import { messageRows, openMessage, storeInContext, type ChatReply, type ReadyMessage } from "./send";

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

export type OpenedCompletion =
  | { kind: "replay"; completion: Completion }
  | {
      kind: "ready";
      exchange: Exchange;
      prompt: ChatMessage[];
      meta: CompletionMeta;
      /** With a context id: the message's place in that context, where the exchange is stored. */
      message?: ReadyMessage;
    };

/**
 * Opens a chat completion: checks the model (404 unknown, 503 not configured) and what the
 * request asks of it, then debits (402 with no credits left), with a context's branch when
 * it names one. Nothing is charged on any refusal.
 */
export async function openCompletion(deps: ChatDeps, input: CompletionInput): Promise<OpenedCompletion> {
  requireCapabilities(knownModel(deps.models, input.modelId), input.messages, input.tooling);
  const fingerprint = sha256Hex(
    JSON.stringify(["POST /v1/chat/completions", input.modelId, input.messages, input.sampling, input.contextId ?? null, ...(input.tooling && Object.keys(input.tooling).length > 0 ? [input.tooling] : [])]),
  );
  const idempotency = input.idempotencyKey ? { key: input.idempotencyKey, fingerprint } : undefined;
  return input.contextId === undefined ? openStateless(deps, input, idempotency) : openInContext(deps, input, input.contextId, idempotency);
}

async function openStateless(deps: ChatDeps, input: CompletionInput, idempotency: { key: string; fingerprint: string } | undefined): Promise<OpenedCompletion> {
  const opened = await openExchange(deps, {
    principal: input.principal,
    modelId: input.modelId,
    idempotency,
    requestId: input.requestId,
    suits: (m) => !lackingCapability(m, input.messages, input.tooling ?? {}),
  });
  if (opened.kind === "replay") return { kind: "replay", completion: replayed(opened.body, textOf(input.messages.at(-1)?.content ?? ""), deps.now()) };
  if (opened.kind === "refused") throw opened.error;
  return { kind: "ready", exchange: opened.exchange, prompt: input.messages, meta: metaOf(opened.exchange) };
}

/**
 * With a context: the last message is the new user message, the context's active branch
 * (as much as fits) stands in for the earlier turns, and the context's instructions, then
 * the caller's system messages, go first. The exchange is stored at the end of the active
 * branch, as POST /chat/send stores it.
 */
async function openInContext(deps: ChatDeps, input: CompletionInput, contextId: string, idempotency: { key: string; fingerprint: string } | undefined): Promise<OpenedCompletion> {
  const message = textOf(input.messages.at(-1)!.content);
  const opened = await openMessage(deps, { principal: input.principal, turn: { kind: "send", message, contextId }, modelId: input.modelId, idempotency, requestId: input.requestId });
  if (opened.kind === "replay") return { kind: "replay", completion: replayed(opened.body, message, deps.now()) };
  const system = input.messages.filter((m) => m.role === "system");
  const [head, ...rest] = opened.prompt;
  const prompt = head?.role === "system" ? [head, ...system, ...rest] : [...system, ...opened.prompt];
  return { kind: "ready", exchange: opened.exchange, prompt, meta: metaOf(opened.exchange), message: opened };
}

/** What a completion yields: the model's reply as it comes, then the stored completion. */
export type CompletionEvent = ModelEvent | { type: "done"; completion: Completion };

/** Runs an opened completion: the model's reply as it comes, then, once stored, the completion. */
export async function* completionExchange(
  deps: ChatDeps,
  opened: Extract<OpenedCompletion, { kind: "ready" }>,
  request: Omit<AnswerRequest, "prompt">,
): AsyncGenerator<CompletionEvent, void, undefined> {
  const whole = yield* answer(deps, opened.exchange, { ...request, prompt: opened.prompt });
  const meta = { ...opened.meta, model: whole.model.id };
  if (!opened.message) {
    const completion = build(meta, whole, null, creditsAfter(opened.exchange, whole.model.id));
    await store(deps, opened.exchange, whole, { statements: [], contextId: null, messageId: null, reply: completion });
    yield { type: "done", completion };
    return;
  }
  const rows = messageRows(deps, opened.message, whole);
  const completion = build(meta, whole, rows.reply.contextId, rows.reply.credits);
  await storeInContext(deps, opened.message, whole, rows, completion);
  yield { type: "done", completion };
}

function metaOf(exchange: Exchange): CompletionMeta {
  return { id: completionId(), created: unixSeconds(exchange.charge.at), model: askedModel(exchange).id };
}

/** A stored reply: a completion, or a context's chat reply (stored so before this version). */
function replayed(body: unknown, message: string, at: Date): Completion {
  return "response" in (body as object) ? fromChatReply(body as ChatReply, message, at) : (body as Completion);
}

function build(meta: CompletionMeta, whole: ModelAnswer, contextId: string | null, credits: Omit<Credits, "day"> | Credits): Completion {
  const { day: _day, ...withoutDay } = credits as Credits;
  const { outcome } = whole;
  const toolCalls = outcome.toolCalls && outcome.toolCalls.length > 0 ? outcome.toolCalls : undefined;
  return {
    ...meta,
    content: whole.text,
    ...(toolCalls ? { toolCalls } : {}),
    finishReason: outcome.finishReason ?? (toolCalls ? "tool_calls" : "stop"),
    usage: { promptTokens: whole.tokens.input, completionTokens: whole.tokens.output },
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
    usage: { promptTokens: messageTokens(message), completionTokens: estimateTokens(reply.response) },
    contextId: reply.contextId,
    credits: reply.credits,
  };
}

function completionId(): string {
  return `chatcmpl-${encodeBase64url(crypto.getRandomValues(new Uint8Array(18)))}`;
}

function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
