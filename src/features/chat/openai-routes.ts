import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/deps";
import { OPENAI_BY_STATUS, openAiShapeOf } from "../../platform/error-codes";
import { ApiError, type ErrorStatus } from "../../platform/http/errors";
import type { HttpError } from "../../platform/http/error-mapper";
import { excerpt } from "../../platform/errors";
import { describeZodError, fieldOf } from "../../platform/http/router";
import type { SSEMessage } from "hono/streaming";
import { availableModels, completionExchange, knownModel, openCompletion, type Completion, type CompletionEvent, type CompletionMeta } from "./completions";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { CreditReplyHeaders, IdempotencyHeaders } from "./chat-schemas";
import { creditsAfter, creditsOf } from "./exchange";
import { clientGone, setChargedHeaders, sseReply, streamError, untilDone } from "./exchange-wire";
import { ChatCompletionRequestSchema, ChatCompletionSchema, completionBody, completionChunks, samplingOf, toChatMessages, toolingOf, type ChatCompletionRequest } from "./openai-wire";
import { jsonData, registerEventSchema, schemaRef, sseEvent } from "../../platform/http/event-stream";
import { ChatCompletionChunkSchema } from "./openai-wire";

// ---------------------------------------------------------------------------------------
// The OpenAI-compatible surface (/v1): its routes and OpenAI's error shape, over the chat
// core; the request, reply and chunk shapes are in openai-wire.ts. See docs/openai-compatible.md.
// ---------------------------------------------------------------------------------------

/** `created` of every model in GET /v1/models: when this catalog was published. */
const CATALOG_CREATED = Date.UTC(2026, 0, 1) / 1000;

// --- errors ------------------------------------------------------------------------------

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** Request fields by their OpenAI name. */
const PARAMS: Record<string, string> = { contextId: "context_id" };

/**
 * An error as /v1 answers it: OpenAI's body, and OpenAI's status and codes where the list
 * of codes says they differ (an unknown model is OpenAI's 404, where POST /chat/send
 * answers 400).
 */
export function openAiError(error: HttpError): { status: ErrorStatus; body: OpenAiErrorBody } {
  const shape = openAiShapeOf(error.code, error.status);
  const param = error.field === null ? null : (PARAMS[error.field] ?? error.field);
  return { status: shape.status, body: { error: { message: error.message, type: shape.type, param, code: shape.code } } };
}

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
    statuses.map((s) => [s, { description: `OpenAI error (${OPENAI_BY_STATUS[s as ErrorStatus]?.type ?? "error"})`, content: { "application/json": { schema: OpenAiErrorSchema } } }]),
  ) as Record<number, { description: string; content: { "application/json": { schema: typeof OpenAiErrorSchema } } }>;
}

/** Like createRouter, but a validation failure names the field as OpenAI's `param`. */
function createOpenAiRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const where = result.target === "json" ? "request body" : result.target;
        throw new ApiError("invalid_request", describeZodError(result.error, where), { field: fieldOf(result.error) });
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

const listModels = authenticatedRoute({
  method: "get",
  path: "/models",
  tags: ["openai"],
  summary: "OpenAI-compatible: the models this server can call now",
  responses: {
    200: {
      description: "OpenAI's model list",
      content: { "application/json": { schema: z.object({ object: z.literal("list"), data: z.array(OpenAiModelSchema) }).openapi("OpenAiModelList") } },
    },
    ...openAiErrorResponses(401, 429, 500),
  },
}, { errorSchema: OpenAiErrorSchema });

const getModel = authenticatedRoute({
  method: "get",
  path: "/models/{model}",
  tags: ["openai"],
  summary: "OpenAI-compatible: one model",
  request: { params: z.object({ model: z.string().openapi({ example: "svc-70b" }) }) },
  responses: {
    200: { description: "The model", content: { "application/json": { schema: OpenAiModelSchema } } },
    ...openAiErrorResponses(401, 404, 429, 500),
  },
}, { errorSchema: OpenAiErrorSchema });

// --- chat completions --------------------------------------------------------------------

// The streamed completion's events (see event-stream.ts), as OpenAI's SDKs read them: no
// `event` field; `data` is a chunk, an OpenAI error body (a failure after the start), or
// `[DONE]`, which ends the stream.
const ChatCompletionStreamEvent = sseEvent(
  undefined,
  {
    oneOf: [
      { ...jsonData({ oneOf: [schemaRef("ChatCompletionChunk"), schemaRef("OpenAiError")] }), not: { const: "[DONE]" } },
      { type: "string", const: "[DONE]", description: "The end of the stream" },
    ],
  },
  "One event of a streamed completion (`stream: true`): a `chat.completion.chunk`, an OpenAI error body if the " +
    "exchange fails after the stream began (nothing is charged), or `[DONE]`",
);

const completionsRoute = authenticatedRoute({
  method: "post",
  path: "/chat/completions",
  tags: ["openai"],
  summary: "OpenAI-compatible chat completion",
  description:
    "OpenAI's chat completions protocol. Costs the model's credit price, like POST /chat/send: charged before the " +
    "model is called, refunded if it fails. With `stream: true`, `chat.completion.chunk` events end with `data: [DONE]`.",
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
        "text/event-stream": { schema: schemaRef("ChatCompletionStreamEvent") },
      },
    },
    ...openAiErrorResponses(400, 401, 402, 404, 409, 413, 415, 422, 429, 500, 502, 503, 504),
  },
}, { errorSchema: OpenAiErrorSchema });

const unknownPath = (c: Context<AppEnv>): never => {
  throw new ApiError(
    "unknown_url",
    `no such endpoint: ${c.req.method} ${excerpt(c.req.path)}; this surface serves GET /v1/models and POST /v1/chat/completions`,
  );
};

const openAiRouter = createOpenAiRouter();
openAiRouter.openAPIRegistry.register("ChatCompletionChunk", ChatCompletionChunkSchema);
registerEventSchema(openAiRouter, "ChatCompletionStreamEvent", ChatCompletionStreamEvent);

export const openAiRoutes = openAiRouter
  .openapi(listModels, (c) => c.json({ object: "list" as const, data: availableModels(c.get("deps").models).map(toOpenAiModel) }, 200))
  .openapi(getModel, (c) => {
    const { model: id } = c.req.valid("param");
    const model = knownModel(c.get("deps").models, id);
    if (!model.available) {
      throw new ApiError("model_not_found", `model '${excerpt(id)}' is not available on this server; GET /v1/models lists the ones that are`, {
        
        field: "model",
      });
    }
    return c.json(toOpenAiModel(model), 200);
  })
  .openapi(completionsRoute, async (c) => {
    const body = c.req.valid("json");
    const deps = c.get("deps");
    const opened = await openCompletion(deps, {
      principal: c.get("principal"),
      modelId: body.model,
      messages: toChatMessages(body.messages),
      sampling: samplingOf(body),
      tooling: toolingOf(body),
      contextId: body.context_id,
      idempotencyKey: c.req.valid("header")["idempotency-key"],
      requestId: c.get("requestId"),
    });
    const stream = body.stream === true;
    if (opened.kind === "replay") return replay(c, opened.completion, body);
    const gone = clientGone(c);
    const events = completionExchange(deps, opened, { signal: gone.signal, stream, options: { sampling: samplingOf(body), ...toolingOf(body) } });
    if (!stream) {
      const { completion } = await untilDone(events);
      setChargedHeaders(c, completion.credits, completion.model);
      return c.json(completionBody(completion), 200);
    }
    // The stream starts once the model has begun (a failure before is an ordinary error reply).
    const first = await events.next();
    const started = !first.done && first.value.type === "started" ? first.value.model : undefined;
    setChargedHeaders(c, started ? creditsAfter(opened.exchange, started) : creditsOf(opened.exchange), started);
    return sseReply(c, gone, completionEvents(c, first, events, opened.meta, body));
  })
  .all("/*", unknownPath);

/** /v1's events: `chat.completion.chunk`s, then `[DONE]`; a failure after the start is an OpenAI error body. */
async function* completionEvents(
  c: Context<AppEnv>,
  first: IteratorResult<CompletionEvent>,
  events: AsyncGenerator<CompletionEvent>,
  meta: CompletionMeta,
  body: ChatCompletionRequest,
): AsyncGenerator<SSEMessage, void, undefined> {
  const chunks = completionChunks(meta, body.stream_options?.include_usage === true);
  try {
    for (let next = first; !next.done; next = await events.next()) {
      const event = next.value;
      if (event.type === "started") yield chunks.start(event.model);
      else if (event.type === "delta") yield chunks.delta(event.text);
      else if (event.type === "tool-call") yield chunks.toolCall(event.call);
      else yield* chunks.end(event.completion);
    }
  } catch (err) {
    // OpenAI's SDKs raise an APIError for an event whose data carries `error`.
    yield { data: JSON.stringify(openAiError(streamError(c, err)).body) };
  } finally {
    await events.return(undefined);
  }
}

/** A retry with the same Idempotency-Key: the first completion again, uncharged, whole or as chunks. */
function replay(c: Context<AppEnv>, completion: Completion, body: ChatCompletionRequest): Response {
  c.header("Idempotent-Replayed", "true");
  setChargedHeaders(c, completion.credits, completion.model);
  if (body.stream !== true) return c.json(completionBody(completion), 200);
  const chunks = completionChunks(completion, body.stream_options?.include_usage === true);
  return sseReply(c, new AbortController(), (async function* () {
    yield chunks.start(completion.model);
    yield chunks.delta(completion.content);
    yield* chunks.end(completion);
  })());
}
