import { z } from "@hono/zod-openapi";
import type { SSEMessage } from "hono/streaming";
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions";
import { excerpt } from "../../platform/errors";
import type { ChatMessage, ContentPart, ModelTooling, Sampling, ToolCallDelta } from "../../platform/models/adapter";
import { MAX_MESSAGE_CHARS } from "./chat-schemas";
import type { Completion, CompletionMeta } from "./completions";

// ---------------------------------------------------------------------------------------
// OpenAI's chat completions wire format: the request as this service validates it (zod,
// which is also the OpenAPI document), and the reply and its chunks, typed by the
// `openai` package (types only). See docs/openai-compatible.md.
// ---------------------------------------------------------------------------------------

/** A bound on max_tokens that no model comes near; the model's own limit applies below it. */
const MAX_REPLY_TOKENS = 1_000_000;

const ContentPartSchema = z
  .object({
    type: z.string().openapi({ example: "text", description: "`text`, or `image_url` for a model that takes images" }),
    text: z.string().optional(),
    refusal: z.string().optional(),
    image_url: z
      .object({
        url: z.string().openapi({ description: "An http(s) URL, or a data: URL of a base64 image" }),
        detail: z.enum(["auto", "low", "high"]).nullable().optional(),
      })
      .optional(),
  })
  .openapi("ChatCompletionContentPart");

const ToolCallSchema = z
  .object({
    id: z.string().min(1).max(200),
    type: z.literal("function").optional(),
    function: z.object({ name: z.string().min(1).max(200), arguments: z.string() }),
  })
  .openapi("ChatCompletionMessageToolCall");

const MessageSchema = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"], {
      error: (issue) =>
        issue.input === "function"
          ? "function messages are OpenAI's deprecated form: send the result as a tool message"
          : "must be system, developer, user, assistant or tool",
    }),
    // Required, as OpenAI documents it; null only on an assistant turn.
    content: z
      .union([z.string(), z.array(ContentPartSchema)], { error: (issue) => (issue.input === undefined ? "is required" : undefined) })
      .nullable(),
    name: z.string().optional(),
    tool_calls: z.array(ToolCallSchema).nullable().optional().openapi({ description: "An assistant turn's calls to the request's tools" }),
    tool_call_id: z.string().min(1).max(200).optional().openapi({ description: "A tool turn: the call whose result it carries" }),
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

/** A function name as OpenAI takes it. */
const FunctionName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1..64 letters, digits, underscores or dashes")
  .openapi({ example: "get_weather" });

const ToolSchema = z
  .object({
    type: z.literal("function", { error: "must be 'function': tools are functions" }),
    function: z.object({
      name: FunctionName,
      description: z.string().max(10_000).optional(),
      parameters: z.record(z.string(), z.unknown()).optional().openapi({ description: "JSON Schema of the arguments object" }),
      strict: z.boolean().nullable().optional(),
    }),
  })
  .openapi("ChatCompletionTool");

const ToolChoiceSchema = z
  .union([
    z.enum(["none", "auto", "required"]),
    z.object({ type: z.literal("function"), function: z.object({ name: FunctionName }) }),
  ])
  .openapi({ description: "`none`, `auto`, `required`, or `{ type: \"function\", function: { name } }` naming one of `tools`" });

const ResponseFormatSchema = z
  .discriminatedUnion(
    "type",
    [
      z.object({ type: z.literal("text") }),
      z.object({ type: z.literal("json_object") }),
      z.object({
        type: z.literal("json_schema"),
        json_schema: z.object({
          name: FunctionName,
          description: z.string().max(10_000).optional(),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullable().optional(),
        }),
      }),
    ],
    { error: (issue) => (issue.input === undefined ? "is required" : "must be text, json_object or json_schema") },
  )
  .openapi({ description: "`text`, `json_object`, or `json_schema` with its schema; relayed to OpenAI-compatible models, translated for Anthropic's" });

/** An image URL the service relays: http(s), or a base64 data: URL of an image. */
function isImageUrl(url: string): boolean {
  if (/^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=\s]+$/.test(url)) return true;
  try {
    return /^https?:$/.test(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** The request's fields, each checked alone; checkRequest checks them together. */
const ChatCompletionRequestFields = z.object({
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
  tools: z.array(ToolSchema).max(128, "must hold at most 128 tools").nullable().optional().openapi({ description: "Functions the model may call (models with `tools: true` in GET /models)" }),
  tool_choice: ToolChoiceSchema.nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  functions: z.array(z.unknown()).nullable().optional().openapi({ description: "OpenAI's deprecated form of tools: refused when not empty" }),
  function_call: z.unknown().optional(),
  logprobs: z.boolean().nullable().optional().openapi({ description: "Refused when true" }),
  response_format: ResponseFormatSchema.nullable().optional(),
  modalities: z.array(z.enum(["text"], { error: onlyText() })).nullable().optional(),
  audio: z.unknown().optional(),
  context_id: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .openapi({ description: "Extension: continue this stored context (see docs/openai-compatible.md); the exchange is stored in it" }),
});

export const ChatCompletionRequestSchema = ChatCompletionRequestFields.superRefine((body, ctx) =>
  checkRequest(body, (path, message) => ctx.addIssue({ code: "custom", path, message })),
).openapi("ChatCompletionRequest");

type RequestFields = z.infer<typeof ChatCompletionRequestFields>;
type Refuse = (path: PropertyKey[], message: string) => void;

/** What the fields cannot say alone: features refused, tools that agree, a conversation that holds together. */
function checkRequest(body: RequestFields, refuse: Refuse): void {
  // Zod runs this check after a non-fatal issue too: an empty list was already refused by min(1).
  if (body.messages.length === 0) return;
  refuseUnsupported(body, refuse);
  checkTools(body, refuse);
  checkMessages(body.messages, refuse);
  if (!body.messages.some((m) => m.role === "user")) refuse(["messages"], "must include at least one user message");
  if (body.context_id !== undefined) checkContextTurn(body, refuse);
}

/** OpenAI's features this service does not have, and its deprecated forms. */
function refuseUnsupported(body: RequestFields, refuse: Refuse): void {
  if (!unset(body.n) && body.n !== 1) refuse(["n"], "must be 1: this service returns one choice per request");
  if (body.functions && body.functions.length > 0) refuse(["functions"], "functions are OpenAI's deprecated form of tools: send them as tools");
  if (!unset(body.function_call) && body.function_call !== "none" && body.function_call !== "auto") {
    refuse(["function_call"], "function_call is OpenAI's deprecated form of tool_choice: send tool_choice");
  }
  if (body.logprobs === true) refuse(["logprobs"], "log probabilities are not supported by this service");
  if (!unset(body.audio)) refuse(["audio"], "audio output is not supported by this service");
}

/** Tool names unique, and a tool_choice that names one of them (or has some to require). */
function checkTools(body: RequestFields, refuse: Refuse): void {
  const tools = body.tools ?? [];
  const names = new Set<string>();
  tools.forEach((tool, i) => {
    if (names.has(tool.function.name)) refuse(["tools", i, "function", "name"], `names the function '${tool.function.name}' twice`);
    names.add(tool.function.name);
  });
  const choice = body.tool_choice;
  if (choice && typeof choice === "object" && !names.has(choice.function.name)) {
    refuse(["tool_choice", "function", "name"], `names no function of tools ('${excerpt(choice.function.name)}')`);
  }
  if (choice === "required" && tools.length === 0) refuse(["tool_choice"], "is 'required' but the request has no tools");
}

/** Each message in its place: tool calls on assistant turns, tool results answering an earlier call, content present. */
function checkMessages(messages: RequestFields["messages"], refuse: Refuse): void {
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    if (m.tool_calls && m.tool_calls.length > 0) {
      if (m.role !== "assistant") refuse(["messages", i, "tool_calls"], "only an assistant message carries tool_calls");
      for (const call of m.tool_calls) calls.add(call.id);
    }
    if (m.role === "tool") {
      if (m.tool_call_id === undefined) refuse(["messages", i, "tool_call_id"], "is required on a tool message: the id of the call it answers");
      else if (!calls.has(m.tool_call_id)) refuse(["messages", i, "tool_call_id"], "names no tool call of an earlier assistant message");
    }
    if (unset(m.content) && !(m.role === "assistant")) refuse(["messages", i, "content"], "is required");
    if (Array.isArray(m.content)) checkContentParts(m.role, m.content, ["messages", i, "content"], refuse);
  });
}

/** Text parts anywhere, image parts in user messages only and with a URL the service relays. */
function checkContentParts(role: WireMessage["role"], parts: Array<z.infer<typeof ContentPartSchema>>, at: PropertyKey[], refuse: Refuse): void {
  parts.forEach((part, j) => {
    if (part.type === "image_url") {
      if (role !== "user") refuse([...at, j, "type"], "images are taken in user messages only");
      else if (!part.image_url || !isImageUrl(part.image_url.url)) {
        refuse([...at, j, "image_url", "url"], "must be an http(s) URL or a data: URL of a base64 image");
      }
      return;
    }
    const text = part.type === "text" ? part.text : part.type === "refusal" ? part.refusal : undefined;
    if (typeof text !== "string") {
      refuse([...at, j, "type"], `only text and image_url content parts are supported, not '${excerpt(part.type)}'`);
    }
  });
}

/** With context_id, the last message is the new user turn that the context stores. */
function checkContextTurn(body: RequestFields, refuse: Refuse): void {
  const last = body.messages.length - 1;
  const message = body.messages[last]!;
  const text = textOfContent(message.content);
  // A context keeps text turns: what it stores and sends again must be text.
  if ((body.tools ?? []).length > 0) refuse(["tools"], "tools are not supported with context_id: a context keeps text turns only");
  if (message.role !== "user") refuse(["messages", last, "role"], "with context_id the last message must be the new user message");
  else if (Array.isArray(message.content) && message.content.some((p) => p.type === "image_url")) {
    refuse(["messages", last, "content"], "images are not supported with context_id: a context keeps text turns only");
  } else if (text.trim() === "") refuse(["messages", last, "content"], "must not be empty or blank");
  else if ([...text].length > MAX_MESSAGE_CHARS) refuse(["messages", last, "content"], `must be at most ${MAX_MESSAGE_CHARS} characters with context_id`);
}

export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;
type WireMessage = z.infer<typeof MessageSchema>;

function textOfContent(content: WireMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  return content.flatMap((p) => (p.type === "text" ? [p.text ?? ""] : p.type === "refusal" ? [p.refusal ?? ""] : [])).join("\n");
}

/** The request's messages as the adapters take them: text parts joined unless an image is among them. */
export function toChatMessages(messages: ChatCompletionRequest["messages"]): ChatMessage[] {
  return messages.map((m): ChatMessage => {
    const role = m.role === "developer" ? "system" : m.role;
    const hasImage = Array.isArray(m.content) && m.content.some((p) => p.type === "image_url");
    const content: ChatMessage["content"] = hasImage
      ? (m.content as Array<z.infer<typeof ContentPartSchema>>).map((p): ContentPart =>
          p.type === "image_url"
            ? { type: "image", url: p.image_url!.url, ...(p.image_url!.detail ? { detail: p.image_url!.detail } : {}) }
            : { type: "text", text: (p.type === "text" ? p.text : p.refusal) ?? "" },
        )
      : textOfContent(m.content);
    const message: ChatMessage = { role, content };
    if (m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0) {
      message.toolCalls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
    }
    if (m.role === "tool") message.toolCallId = m.tool_call_id;
    return message;
  });
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

/** The request's tools, tool choice and response format, as the adapters take them. */
export function toolingOf(body: ChatCompletionRequest): ModelTooling {
  const tooling: ModelTooling = {};
  const tools = body.tools ?? [];
  if (tools.length > 0) {
    tooling.tools = tools.map((t) => ({
      name: t.function.name,
      ...(t.function.description !== undefined ? { description: t.function.description } : {}),
      ...(t.function.parameters !== undefined ? { parameters: t.function.parameters } : {}),
      ...(!unset(t.function.strict) ? { strict: t.function.strict! } : {}),
    }));
    if (!unset(body.parallel_tool_calls)) tooling.parallelToolCalls = body.parallel_tool_calls!;
  }
  const choice = body.tool_choice;
  // Without tools, only `none` means anything, and it is what no tools means already.
  if (!unset(choice) && tools.length > 0) tooling.toolChoice = typeof choice === "string" ? choice : { name: choice!.function.name };
  const format = body.response_format;
  if (format && format.type === "json_object") tooling.responseFormat = { type: "json_object" };
  if (format && format.type === "json_schema") {
    const schema = format.json_schema;
    tooling.responseFormat = {
      type: "json_schema",
      name: schema.name,
      ...(schema.description !== undefined ? { description: schema.description } : {}),
      ...(schema.schema !== undefined ? { schema: schema.schema } : {}),
      ...(!unset(schema.strict) ? { strict: schema.strict! } : {}),
    };
  }
  return tooling;
}

const UsageSchema = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });

const ToolCallReplySchema = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string().openapi({ description: "JSON text, as the model wrote it" }) }),
});

export const ChatCompletionSchema = z
  .object({
    id: z.string().openapi({ example: "chatcmpl-3q9v…" }),
    object: z.literal("chat.completion"),
    created: z.number().int(),
    model: z.string().openapi({ example: "svc-70b", description: "The model that answered (a fallback when the one asked for failed first)" }),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal("assistant"),
          content: z.string().nullable().openapi({ description: "null when the reply is only tool calls" }),
          refusal: z.null(),
          tool_calls: z.array(ToolCallReplySchema).optional(),
        }),
        logprobs: z.null(),
        finish_reason: z.enum(["stop", "length", "content_filter", "tool_calls"]),
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
        delta: z.object({
          role: z.literal("assistant").optional(),
          content: z.string().optional(),
          tool_calls: z
            .array(
              z.object({
                index: z.number().int(),
                id: z.string().optional(),
                type: z.literal("function").optional(),
                function: z.object({ name: z.string().optional(), arguments: z.string() }),
              }),
            )
            .optional()
            .openapi({ description: "A piece of a tool call: its first piece carries the id, type and name, the next ones more of its arguments" }),
        }),
        logprobs: z.null(),
        finish_reason: z.enum(["stop", "length", "content_filter", "tool_calls"]).nullable(),
      }),
    ),
    usage: UsageSchema.nullable().optional().openapi({
      description: "With `stream_options.include_usage`: null in every chunk but the last, which has no choices",
    }),
  })
  .openapi("ChatCompletionChunk");

/** A completion as OpenAI's `chat.completion`, plus the context it was stored in (an extension). */
export function completionBody(c: Completion): ChatCompletion & { context_id?: string } {
  const toolCalls = c.toolCalls && c.toolCalls.length > 0 ? c.toolCalls : undefined;
  const message: ChatCompletion.Choice["message"] = {
    role: "assistant",
    content: toolCalls && c.content === "" ? null : c.content,
    refusal: null,
    ...(toolCalls ? { tool_calls: toolCalls.map((t) => ({ id: t.id, type: "function" as const, function: { name: t.name, arguments: t.arguments } })) } : {}),
  };
  return {
    id: c.id,
    object: "chat.completion",
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: c.finishReason }],
    usage: usageBody(c.usage),
    ...(c.contextId ? { context_id: c.contextId } : {}),
  };
}

function usageBody(u: Completion["usage"]): NonNullable<ChatCompletion["usage"]> {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}

/**
 * `chat.completion.chunk` events; with include_usage every chunk has `usage: null` but the
 * last. The model is the one that answers, known when the stream starts.
 */
export function completionChunks(meta: CompletionMeta, includeUsage: boolean) {
  let model = meta.model;
  const event = (rest: Pick<ChatCompletionChunk, "choices"> & { usage?: ChatCompletionChunk["usage"] }): SSEMessage => {
    const chunk: ChatCompletionChunk = { id: meta.id, object: "chat.completion.chunk", created: meta.created, model, ...rest };
    return { data: JSON.stringify(chunk) };
  };
  const choice = (delta: ChatCompletionChunk.Choice.Delta, finishReason: ChatCompletionChunk.Choice["finish_reason"]) =>
    event({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });
  return {
    start: (answeredBy?: string) => {
      if (answeredBy) model = answeredBy;
      return choice({ role: "assistant", content: "" }, null);
    },
    delta: (content: string) => choice({ content }, null),
    /** A piece of a tool call: its first piece carries the id, type and name. */
    toolCall: (call: ToolCallDelta) =>
      choice(
        {
          tool_calls: [
            {
              index: call.index,
              ...(call.id ? { id: call.id, type: "function" as const } : {}),
              function: { ...(call.name !== undefined ? { name: call.name } : {}), arguments: call.arguments ?? "" },
            },
          ],
        },
        null,
      ),
    end: (completion: Completion): SSEMessage[] => [
      choice({}, completion.finishReason),
      ...(includeUsage ? [event({ choices: [], usage: usageBody(completion.usage) })] : []),
      { data: "[DONE]" },
    ],
  };
}
