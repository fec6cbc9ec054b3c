import { z } from "@hono/zod-openapi";
import type { SSEMessage } from "hono/streaming";
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions";
import { excerpt } from "../../platform/errors";
import type { ChatMessage, Sampling } from "../../platform/models/adapter";
import type { Completion, CompletionMeta } from "./completions";

// ---------------------------------------------------------------------------------------
// OpenAI's chat completions wire format: the request as this service validates it (zod,
// which is also the OpenAPI document), and the reply and its chunks, typed by the
// `openai` package (types only). See docs/openai-compatible.md.
// ---------------------------------------------------------------------------------------

/** The longest new message a context takes, as on POST /chat/send. */
const MAX_MESSAGE_CHARS = 32_000;

/** A bound on max_tokens that no model comes near; the model's own limit applies below it. */
const MAX_REPLY_TOKENS = 1_000_000;

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
    // Required, as OpenAI documents it; null only on an assistant turn.
    content: z
      .union([z.string(), z.array(ContentPartSchema)], { error: (issue) => (issue.input === undefined ? "is required" : undefined) })
      .nullable(),
    name: z.string().optional(),
    tool_calls: z.array(z.unknown()).nullable().optional(),
  })
  .openapi("ChatCompletionMessage");

const unset = (v: unknown) => v === undefined || v === null;

/**
 * An optional JSON number that may also be null, which means "the default", as OpenAI's
 * API and SDKs take it. The body parser hands integers over as bigint (it keeps int64 ids
 * exact), fractions as numbers.
 */
function optionalNumber(schema: z.ZodNumber, type: "number" | "integer" = "number") {
  // The document shows the bounds the piped schema checks (not those of a safe integer),
  // and null among the types: the hand-set type would otherwise hide the nullable.
  const bound = (v: number | null) => (v === null || Math.abs(v) === Number.MAX_SAFE_INTEGER ? undefined : v);
  return z
    .custom<number | bigint>((v) => typeof v === "number" || typeof v === "bigint", { message: "must be a number" })
    .transform((v) => Number(v))
    .pipe(schema)
    .nullable()
    .optional()
    .openapi({ type: [type, "null"], minimum: bound(schema.minValue), maximum: bound(schema.maxValue) });
}

/** The error of a field whose only value is "text" (zod reports any other input, missing too, as a wrong value). */
function onlyText(hint?: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : `only 'text' is supported${hint ? `; ${hint}` : ""}`);
}

const noTools = "tool calling is not supported by this service; send the request without tools";

export const ChatCompletionRequestSchema = z
  .object({
    model: z.string({ error: "is required: name a model from GET /v1/models" }).min(1).max(200).openapi({ example: "svc-70b" }),
    messages: z.array(MessageSchema).min(1, "must hold at least one message"),
    stream: z.boolean().nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
    temperature: optionalNumber(z.number().min(0).max(2)),
    top_p: optionalNumber(z.number().min(0).max(1)),
    max_tokens: optionalNumber(z.number().int().min(1).max(MAX_REPLY_TOKENS), "integer").openapi({
      description: "Deprecated by OpenAI in favour of max_completion_tokens; both are taken",
    }),
    max_completion_tokens: optionalNumber(z.number().int().min(1).max(MAX_REPLY_TOKENS), "integer"),
    stop: z.union([z.string(), z.array(z.string()).max(4, "must hold at most 4 sequences")]).nullable().optional(),
    n: optionalNumber(z.number().int(), "integer").openapi({ minimum: 1, maximum: 1, description: "Only 1" }),
    tools: z.array(z.unknown()).nullable().optional().openapi({ description: "Refused when not empty" }),
    functions: z.array(z.unknown()).nullable().optional().openapi({ description: "Refused when not empty" }),
    tool_choice: z.unknown().optional(),
    function_call: z.unknown().optional(),
    logprobs: z.boolean().nullable().optional().openapi({ description: "Refused when true" }),
    response_format: z
      .object({ type: z.enum(["text"], { error: onlyText("ask for JSON in the messages instead") }) })
      .nullable()
      .optional()
      .openapi({ description: "Only `text`: no structured output (`json_object`, `json_schema`)" }),
    modalities: z.array(z.enum(["text"], { error: onlyText() })).nullable().optional(),
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
    if (!unset(body.audio)) refuse(["audio"], "audio output is not supported by this service");

    body.messages.forEach((m, i) => {
      if (m.tool_calls && m.tool_calls.length > 0) refuse(["messages", i, "tool_calls"], noTools);
      if (unset(m.content) && m.role !== "assistant") refuse(["messages", i, "content"], "is required");
      if (Array.isArray(m.content)) {
        m.content.forEach((part, j) => {
          const text = part.type === "text" ? part.text : part.type === "refusal" ? part.refusal : undefined;
          if (typeof text !== "string") {
            refuse(["messages", i, "content", j, "type"], `only text content is supported, not '${excerpt(part.type)}'`);
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

export function toChatMessages(messages: ChatCompletionRequest["messages"]): ChatMessage[] {
  return messages.map((m) => ({ role: m.role === "developer" ? "system" : m.role, content: textOf(m.content) }));
}

export function samplingOf(body: ChatCompletionRequest): Sampling {
  const sampling: Sampling = {};
  if (!unset(body.temperature)) sampling.temperature = body.temperature!;
  if (!unset(body.top_p)) sampling.topP = body.top_p!;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (!unset(maxTokens)) sampling.maxTokens = maxTokens!;
  if (!unset(body.stop)) sampling.stop = typeof body.stop === "string" ? [body.stop] : body.stop!;
  return sampling;
}

const UsageSchema = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });

export const ChatCompletionSchema = z
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

/** One `chat.completion.chunk` of a stream, as completionChunks writes it (for the document). */
export const ChatCompletionChunkSchema = z
  .object({
    id: z.string().openapi({ example: "chatcmpl-3q9v…" }),
    object: z.literal("chat.completion.chunk"),
    created: z.number().int(),
    model: z.string().openapi({ example: "svc-70b" }),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
        logprobs: z.null(),
        finish_reason: z.enum(["stop", "length", "content_filter"]).nullable(),
      }),
    ),
    usage: UsageSchema.nullable().optional().openapi({
      description: "With `stream_options.include_usage`: null in every chunk but the last, which has no choices",
    }),
  })
  .openapi("ChatCompletionChunk");

/** A completion as OpenAI's `chat.completion`, plus the context it was stored in (an extension). */
export function completionBody(c: Completion): ChatCompletion & { context_id?: string } {
  return {
    id: c.id,
    object: "chat.completion",
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message: { role: "assistant", content: c.content, refusal: null }, logprobs: null, finish_reason: c.finishReason }],
    usage: usageBody(c.usage),
    ...(c.contextId ? { context_id: c.contextId } : {}),
  };
}

function usageBody(u: Completion["usage"]): NonNullable<ChatCompletion["usage"]> {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}

/** `chat.completion.chunk` events; with include_usage every chunk has `usage: null` but the last. */
export function completionChunks(meta: CompletionMeta, includeUsage: boolean) {
  const event = (rest: Pick<ChatCompletionChunk, "choices"> & { usage?: ChatCompletionChunk["usage"] }): SSEMessage => {
    const chunk: ChatCompletionChunk = { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, ...rest };
    return { data: JSON.stringify(chunk) };
  };
  const choice = (delta: ChatCompletionChunk.Choice.Delta, finishReason: ChatCompletionChunk.Choice["finish_reason"]) =>
    event({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });
  return {
    start: () => choice({ role: "assistant", content: "" }, null),
    delta: (content: string) => choice({ content }, null),
    end: (completion: Completion): SSEMessage[] => [
      choice({}, completion.finishReason),
      ...(includeUsage ? [event({ choices: [], usage: usageBody(completion.usage) })] : []),
      { data: "[DONE]" },
    ],
  };
}
