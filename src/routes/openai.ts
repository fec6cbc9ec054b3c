import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import { requireAuth } from "../auth/credentials";
import type { AppEnv } from "../deps";
import { ApiError } from "../errors";
import type { ChatMessage, Sampling } from "../models/adapter";
import { describeZodError } from "../router";
import { creditHeaders } from "../services/chat";
import { availableModels, knownModel, OpenAiApiError, startCompletion, type Completion } from "../services/completions";
import { authenticated } from "./errors";
import { CreditReplyHeaders, IdempotencyHeaders } from "./chat";

// ---------------------------------------------------------------------------------------
// The OpenAI-compatible surface (/v1): OpenAI's request, reply, stream and error shapes
// over the chat core. See docs/openai-compatible.md.
// ---------------------------------------------------------------------------------------

/** The longest new message a context takes, as on POST /chat/send. */
const MAX_MESSAGE_CHARS = 32_000;

/** A bound on max_tokens that no model comes near; the model's own limit applies below it. */
const MAX_REPLY_TOKENS = 1_000_000;

/** `created` of every model in GET /v1/models: when this catalog was published. */
const CATALOG_CREATED = Date.UTC(2026, 0, 1) / 1000;

// --- errors ------------------------------------------------------------------------------

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * OpenAI's `type` and default `code` by status. The `openai` SDK picks its error class by
 * status alone (400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 404 NotFoundError, 409 ConflictError, 422 UnprocessableEntityError, 429 RateLimitError,
 * 5xx InternalServerError, anything else the base APIError), so the statuses are the
 * service's own; 402 stays 402 (an APIError whose code is `insufficient_quota`), which
 * the SDK, unlike a 429, does not retry.
 */
const kinds: Record<number, { type: string; code: string | null }> = {
  400: { type: "invalid_request_error", code: null },
  401: { type: "authentication_error", code: "invalid_api_key" },
  402: { type: "insufficient_quota", code: "insufficient_quota" },
  403: { type: "permission_error", code: null },
  404: { type: "not_found_error", code: null },
  409: { type: "invalid_request_error", code: "idempotency_key_in_use" },
  413: { type: "invalid_request_error", code: "request_too_large" },
  415: { type: "invalid_request_error", code: "unsupported_media_type" },
  422: { type: "invalid_request_error", code: "idempotency_key_reused" },
  429: { type: "rate_limit_error", code: "rate_limit_exceeded" },
  500: { type: "api_error", code: "internal_error" },
  502: { type: "api_error", code: "upstream_error" },
  503: { type: "api_error", code: "model_not_available" },
  504: { type: "api_error", code: "upstream_timeout" },
};

export function openAiErrorBody(error: ApiError): OpenAiErrorBody {
  const kind = kinds[error.status] ?? { type: error.status >= 500 ? "api_error" : "invalid_request_error", code: null };
  const specific = error instanceof OpenAiApiError ? error : undefined;
  return {
    error: { message: error.message, type: kind.type, param: specific?.param ?? null, code: specific?.code ?? kind.code },
  };
}

/**
 * Scoped to /v1/*, outside the body parsers: whatever failed below (body limits, JSON,
 * authentication, validation, the handler) was already answered by app.onError with the
 * `{ error, message }` body; this answers it again in OpenAI's shape, same status and
 * headers. Every other path keeps the service's body.
 */
export const openAiErrors = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const err = c.error;
  if (!err) return;
  let error: ApiError;
  if (err instanceof ApiError) error = err;
  else if (err instanceof HTTPException && err.status < 500) error = new ApiError(err.status as 400, err.message || "bad request");
  // Already logged, with the request id, by app.onError.
  else error = new ApiError(500, `internal error; quote request id ${c.var.requestId} when reporting it`);
  // A model that is not configured stays so: the SDKs' automatic retries would only repeat it.
  const retry: Record<string, string> = error.status === 503 ? { "x-should-retry": "false" } : {};
  c.res = undefined;
  c.res = c.json(openAiErrorBody(error), error.status, { ...error.headers, ...retry });
});

const OpenAiErrorSchema = z
  .object({
    error: z.object({
      message: z.string().openapi({ example: "model 'gpt-5' does not exist; available models: svc-70b" }),
      type: z.string().openapi({ example: "not_found_error" }),
      param: z.string().nullable().openapi({ example: "model" }),
      code: z.string().nullable().openapi({ example: "model_not_found" }),
    }),
  })
  .openapi("OpenAiError");

function openAiErrorResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { description: `OpenAI error (${kinds[s]?.type ?? "error"})`, content: { "application/json": { schema: OpenAiErrorSchema } } }]),
  ) as Record<number, { description: string; content: { "application/json": { schema: typeof OpenAiErrorSchema } } }>;
}

/** `messages[2].content` for the path ["messages", 2, "content"]. */
function paramOf(path: readonly PropertyKey[]): string | null {
  if (path.length === 0) return null;
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`)).join("");
}

/** Like createRouter, but a validation failure names the field as OpenAI's `param`. */
function createOpenAiRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const where = result.target === "json" ? "request body" : result.target;
        throw new OpenAiApiError(400, describeZodError(result.error, where), null, paramOf(result.error.issues[0]?.path ?? []));
      }
    },
  });
}

// --- models ------------------------------------------------------------------------------

const OpenAiModelSchema = z
  .object({
    id: z.string().openapi({ example: "svc-70b" }),
    object: z.literal("model"),
    created: z.number().int().openapi({ example: CATALOG_CREATED }),
    owned_by: z.string().openapi({ example: "svc", description: "The provider serving the model" }),
  })
  .openapi("OpenAiModel");

const toOpenAiModel = (m: { id: string; provider: string }) => ({
  id: m.id,
  object: "model" as const,
  created: CATALOG_CREATED,
  owned_by: m.provider,
});

const listModels = createRoute({
  method: "get",
  path: "/models",
  tags: ["openai"],
  summary: "OpenAI-compatible: the models this server can call now",
  security: authenticated,
  middleware: [requireAuth] as const,
  responses: {
    200: {
      description: "OpenAI's model list",
      content: { "application/json": { schema: z.object({ object: z.literal("list"), data: z.array(OpenAiModelSchema) }).openapi("OpenAiModelList") } },
    },
    ...openAiErrorResponses(401),
  },
});

const getModel = createRoute({
  method: "get",
  path: "/models/{model}",
  tags: ["openai"],
  summary: "OpenAI-compatible: one model",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: { params: z.object({ model: z.string().openapi({ example: "svc-70b" }) }) },
  responses: {
    200: { description: "The model", content: { "application/json": { schema: OpenAiModelSchema } } },
    ...openAiErrorResponses(401, 404),
  },
});

// --- chat completions --------------------------------------------------------------------

const ContentPartSchema = z.object({
  type: z.string().openapi({ example: "text" }),
  text: z.string().optional(),
  refusal: z.string().optional(),
});

const MessageSchema = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant"], {
      error: (issue) =>
        issue.input === "tool" || issue.input === "function"
          ? "tool messages are not supported: this service offers no tool calling"
          : "must be system, developer, user or assistant",
    }),
    content: z.union([z.string(), z.array(ContentPartSchema)]).nullable().optional(),
    name: z.string().optional(),
    tool_calls: z.array(z.unknown()).nullable().optional(),
  })
  .openapi("ChatCompletionMessage");

const unset = (v: unknown) => v === undefined || v === null;

/** A JSON number: the body parser hands integers over as bigint (it keeps int64 ids exact), fractions as numbers. */
function jsonNumber(schema: z.ZodNumber, type: "number" | "integer" = "number") {
  return z
    .custom<number | bigint>((v) => typeof v === "number" || typeof v === "bigint", { message: "must be a number" })
    .transform((v) => Number(v))
    .pipe(schema)
    .openapi({ type });
}
const noTools = "tool calling is not supported by this service; send the request without tools";

const ChatCompletionRequestSchema = z
  .object({
    model: z.string({ error: "is required: name a model from GET /v1/models" }).min(1).max(200).openapi({ example: "svc-70b" }),
    messages: z.array(MessageSchema).min(1, "must hold at least one message"),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
    temperature: jsonNumber(z.number().min(0).max(2)).nullable().optional(),
    top_p: jsonNumber(z.number().min(0).max(1)).nullable().optional(),
    max_tokens: jsonNumber(z.number().int().min(1).max(MAX_REPLY_TOKENS), "integer")
      .nullable()
      .optional()
      .openapi({ description: "Deprecated by OpenAI in favour of max_completion_tokens; both are taken" }),
    max_completion_tokens: jsonNumber(z.number().int().min(1).max(MAX_REPLY_TOKENS), "integer").nullable().optional(),
    stop: z.union([z.string(), z.array(z.string()).max(4, "must hold at most 4 sequences")]).nullable().optional(),
    n: jsonNumber(z.number().int(), "integer").nullable().optional().openapi({ description: "Only 1" }),
    tools: z.array(z.unknown()).nullable().optional().openapi({ description: "Refused when not empty" }),
    functions: z.array(z.unknown()).nullable().optional().openapi({ description: "Refused when not empty" }),
    tool_choice: z.unknown().optional(),
    function_call: z.unknown().optional(),
    logprobs: z.boolean().nullable().optional().openapi({ description: "Refused when true" }),
    response_format: z.object({ type: z.string() }).nullable().optional().openapi({ description: "Only `text`" }),
    modalities: z.array(z.string()).nullable().optional().openapi({ description: "Only `text`" }),
    audio: z.unknown().optional(),
    context_id: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: "Extension: continue this stored context (see docs/openai-compatible.md); the exchange is stored in it" }),
  })
  .superRefine((body, ctx) => {
    const refuse = (path: PropertyKey[], message: string) => ctx.addIssue({ code: "custom", path, message });
    // Zod runs this check after a non-fatal issue too: an empty list was already refused by min(1).
    if (body.messages.length === 0) return;
    if (!unset(body.n) && body.n !== 1) refuse(["n"], "must be 1: this service returns one choice per request");
    if (body.tools && body.tools.length > 0) refuse(["tools"], noTools);
    if (body.functions && body.functions.length > 0) refuse(["functions"], noTools);
    if (!unset(body.tool_choice) && body.tool_choice !== "none" && body.tool_choice !== "auto") refuse(["tool_choice"], noTools);
    if (!unset(body.function_call) && body.function_call !== "none" && body.function_call !== "auto") refuse(["function_call"], noTools);
    if (body.logprobs === true) refuse(["logprobs"], "log probabilities are not supported by this service");
    if (body.response_format && body.response_format.type !== "text") {
      refuse(["response_format", "type"], "only 'text' is supported; ask for JSON in the messages instead");
    }
    if (body.modalities?.some((m) => m !== "text")) refuse(["modalities"], "only 'text' is supported");
    if (!unset(body.audio)) refuse(["audio"], "audio output is not supported by this service");

    body.messages.forEach((m, i) => {
      if (m.tool_calls && m.tool_calls.length > 0) refuse(["messages", i, "tool_calls"], noTools);
      if (unset(m.content) && m.role !== "assistant") refuse(["messages", i, "content"], "is required");
      if (Array.isArray(m.content)) {
        m.content.forEach((part, j) => {
          const text = part.type === "text" ? part.text : part.type === "refusal" ? part.refusal : undefined;
          if (typeof text !== "string") {
            refuse(["messages", i, "content", j, "type"], `only text content is supported, not '${part.type}'`);
          }
        });
      }
    });
    if (!body.messages.some((m) => m.role === "user")) refuse(["messages"], "must include at least one user message");

    if (body.context_id !== undefined) {
      const last = body.messages.length - 1;
      const message = body.messages[last]!;
      const text = textOf(message.content);
      if (message.role !== "user") refuse(["messages", last, "role"], "with context_id the last message must be the new user message");
      else if (text.trim() === "") refuse(["messages", last, "content"], "must not be empty or blank");
      else if ([...text].length > MAX_MESSAGE_CHARS) refuse(["messages", last, "content"], `must be at most ${MAX_MESSAGE_CHARS} characters with context_id`);
    }
  })
  .openapi("ChatCompletionRequest");

type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

function textOf(content: z.infer<typeof MessageSchema>["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  return content.map((p) => (p.type === "text" ? p.text : p.refusal) ?? "").join("\n");
}

function toChatMessages(messages: ChatCompletionRequest["messages"]): ChatMessage[] {
  return messages.map((m) => ({ role: m.role === "developer" ? "system" : m.role, content: textOf(m.content) }));
}

function samplingOf(body: ChatCompletionRequest): Sampling {
  const sampling: Sampling = {};
  if (!unset(body.temperature)) sampling.temperature = body.temperature!;
  if (!unset(body.top_p)) sampling.topP = body.top_p!;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (!unset(maxTokens)) sampling.maxTokens = maxTokens!;
  if (!unset(body.stop)) sampling.stop = typeof body.stop === "string" ? [body.stop] : body.stop!;
  return sampling;
}

const UsageSchema = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });

const ChatCompletionSchema = z
  .object({
    id: z.string().openapi({ example: "chatcmpl-3q9v…" }),
    object: z.literal("chat.completion"),
    created: z.number().int(),
    model: z.string().openapi({ example: "svc-70b" }),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({ role: z.literal("assistant"), content: z.string(), refusal: z.null() }),
        logprobs: z.null(),
        finish_reason: z.enum(["stop", "length", "content_filter"]),
      }),
    ),
    usage: UsageSchema,
    context_id: z.string().optional().openapi({ description: "Extension: the context the exchange was stored in" }),
  })
  .openapi("ChatCompletion");

const completionsRoute = createRoute({
  method: "post",
  path: "/chat/completions",
  tags: ["openai"],
  summary: "OpenAI-compatible chat completion",
  description:
    "OpenAI's chat completions protocol. Costs the model's credit price, like POST /chat/send: charged before the " +
    "model is called, refunded if it fails. With `stream: true`, `chat.completion.chunk` events end with `data: [DONE]`.",
  security: authenticated,
  middleware: [requireAuth] as const,
  request: {
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: ChatCompletionRequestSchema } } },
  },
  responses: {
    200: {
      description: "The completion (JSON), or its chunks (text/event-stream)",
      headers: CreditReplyHeaders,
      content: {
        "application/json": { schema: ChatCompletionSchema },
        "text/event-stream": {
          schema: z.string().openapi({ example: 'data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"Water"}}]}\n\ndata: [DONE]\n\n' }),
        },
      },
    },
    ...openAiErrorResponses(400, 401, 402, 404, 409, 413, 415, 422, 502, 503, 504),
  },
});

function completionBody(c: Completion) {
  return {
    id: c.id,
    object: "chat.completion" as const,
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message: { role: "assistant" as const, content: c.content, refusal: null }, logprobs: null, finish_reason: c.finishReason }],
    usage: usageBody(c.usage),
    ...(c.contextId ? { context_id: c.contextId } : {}),
  };
}

function usageBody(u: Completion["usage"]) {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}

/** Writes `chat.completion.chunk` events; with include_usage every chunk has `usage: null` but the last. */
function chunkWriter(sse: SSEStreamingApi, meta: { id: string; created: number; model: string }, includeUsage: boolean) {
  const write = (rest: object) =>
    sse.writeSSE({ data: JSON.stringify({ id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, ...rest }) });
  const choice = (delta: object, finishReason: string | null) => ({
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  return {
    start: () => write(choice({ role: "assistant", content: "" }, null)),
    delta: (content: string) => write(choice({ content }, null)),
    async end(completion: Completion) {
      await write(choice({}, completion.finishReason));
      if (includeUsage) await write({ choices: [], usage: usageBody(completion.usage) });
      await sse.writeSSE({ data: "[DONE]" });
    },
  };
}

/** Lets work outlive the reply (Workers' waitUntil); on Node the promise runs on by itself. */
function waitUntil(c: Context<AppEnv>, promise: Promise<unknown>) {
  try {
    c.executionCtx.waitUntil(promise);
  } catch {
    // No ExecutionContext outside Workers.
  }
}

const unknownPath = (c: Context<AppEnv>): never => {
  throw new OpenAiApiError(
    404,
    `no such endpoint: ${c.req.method} ${c.req.path}; this surface serves GET /v1/models and POST /v1/chat/completions`,
    "unknown_url",
  );
};

export const openAiRoutes = createOpenAiRouter()
  .openapi(listModels, (c) => c.json({ object: "list" as const, data: availableModels(c.var.deps.models).map(toOpenAiModel) }, 200))
  .openapi(getModel, (c) => {
    const { model: id } = c.req.valid("param");
    const model = knownModel(c.var.deps.models, id);
    if (!model.available) {
      throw new OpenAiApiError(404, `model '${id}' is not available on this server; GET /v1/models lists the ones that are`, "model_not_found", "model");
    }
    return c.json(toOpenAiModel(model), 200);
  })
  .openapi(completionsRoute, async (c) => {
    const body = c.req.valid("json");
    const deps = c.var.deps;
    const includeUsage = body.stream_options?.include_usage === true;
    const start = await startCompletion(deps, {
      principal: c.var.principal,
      modelId: body.model,
      messages: toChatMessages(body.messages),
      sampling: samplingOf(body),
      contextId: body.context_id,
      idempotencyKey: c.req.valid("header")["idempotency-key"],
      requestId: c.var.requestId,
    });

    if (start.kind === "replay") {
      const { completion } = start;
      c.header("Idempotent-Replayed", "true");
      for (const [name, value] of Object.entries(creditHeaders(completion.credits))) c.header(name, value);
      if (!body.stream) return c.json(completionBody(completion), 200);
      return streamSSE(c, async (sse) => {
        const chunks = chunkWriter(sse, completion, includeUsage);
        await chunks.start();
        await chunks.delta(completion.content);
        await chunks.end(completion);
      });
    }

    const { exchange } = start;
    if (!body.stream) {
      const content = await exchange.complete(start.prompt, c.req.raw.signal, start.callOptions);
      const completion = await start.finish(content);
      return c.json(completionBody(completion), 200, creditHeaders(completion.credits));
    }

    // The client leaving shows as the request's signal (Node) or the response being cancelled.
    const gone = new AbortController();
    const signal = AbortSignal.any([c.req.raw.signal, gone.signal]);
    const deltas = await exchange.stream(start.prompt, signal, start.callOptions);
    for (const [name, value] of Object.entries(creditHeaders(exchange.credits))) c.header(name, value);

    const relay = async (sse: SSEStreamingApi) => {
      const chunks = chunkWriter(sse, start, includeUsage);
      let text = "";
      try {
        await chunks.start();
        for await (const delta of deltas) {
          text += delta;
          await chunks.delta(delta);
        }
        // The upstream finished: the exchange is complete and is stored, whether or not the
        // client is still there to read the last chunks.
        await chunks.end(await start.finish(text));
      } catch (err) {
        await exchange.abandon("the stream failed");
        const error = err instanceof ApiError ? err : new ApiError(500, `internal error; quote request id ${c.var.requestId} when reporting it`);
        if (!(err instanceof ApiError)) deps.log.error("chat completion stream failed", { requestId: c.var.requestId, err });
        // OpenAI's SDKs raise an APIError for an event whose data carries `error`.
        if (!sse.aborted) await sse.writeSSE({ data: JSON.stringify(openAiErrorBody(error)) });
      }
    };

    return streamSSE(c, async (sse) => {
      sse.onAbort(() => gone.abort(new DOMException("the client went away", "AbortError")));
      const work = relay(sse);
      waitUntil(c, work);
      await work;
    });
  })
  .all("/*", unknownPath);
