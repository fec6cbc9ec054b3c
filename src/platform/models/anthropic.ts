import {
  asUpstreamFailure,
  fetchUpstream,
  globalFetch,
  finishReasonFrom,
  toolCallCollector,
  upstreamJson,
  upstreamStatusError,
  UpstreamError,
  textOf,
  type ChatMessage,
  type ModelAdapter,
  type ModelTooling,
  type UpstreamFetch,
  type ModelOutcome,
  type ModelRequest,
  type Sampling,
  type StreamPiece,
  type ToolCall,
  type ToolCallDelta,
} from "./adapter";
import { readServerSentEvents, type ByteStream } from "./sse";

export interface AnthropicOptions {
  /** How to call the upstream (default: the global fetch). */
  fetch?: UpstreamFetch;
  /** The API origin, e.g. https://api.anthropic.com (…/v1/messages is appended). */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Longest reply asked for; the Messages API requires a bound. */
  maxTokens?: number;
}

const API_VERSION = "2023-06-01";

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
}

interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

interface MessagesReply {
  content?: ContentBlock[];
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

interface StreamEvent {
  type?: string;
  index?: number;
  content_block?: ContentBlock;
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  message?: { usage?: AnthropicUsage };
  usage?: AnthropicUsage;
  error?: unknown;
}

/** The ModelOutcome of a reply's stop_reason and usage (input tokens from message_start when streamed). */
function outcomeOf(stopReason: string | null | undefined, input: number | undefined, output: number | undefined, toolCalls?: ToolCall[]): ModelOutcome {
  return {
    // A reply whose only tool call was the stand-in for response_format is a plain answer.
    finishReason: stopReason === "tool_use" && !toolCalls ? "stop" : finishReasonFrom(stopReason),
    usage: typeof input === "number" && typeof output === "number" ? { promptTokens: input, completionTokens: output } : undefined,
    toolCalls,
  };
}

/**
 * Sampling on the Messages API's terms: temperature is 0..1 there (higher values are
 * clamped to 1), newer models refuse temperature and top_p together (temperature wins),
 * stop sequences must hold more than whitespace, and max_tokens is required.
 */
export function toAnthropicSampling(sampling: Sampling, defaultMaxTokens: number) {
  const stop = sampling.stop?.filter((s) => s.trim() !== "");
  return {
    max_tokens: sampling.maxTokens ?? defaultMaxTokens,
    temperature: sampling.temperature === undefined ? undefined : Math.min(sampling.temperature, 1),
    top_p: sampling.temperature === undefined ? sampling.topP : undefined,
    stop_sequences: stop && stop.length > 0 ? stop : undefined,
  };
}

type Block = Record<string, unknown>;

/** An image part as a Messages API image block: a data: URL is sent as base64, any other URL as a URL source. */
function imageBlock(url: string): Block {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return { type: "image", source: data ? { type: "base64", media_type: data[1], data: data[2] } : { type: "url", url } };
}

function contentBlocks(content: ChatMessage["content"]): Block[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return content.map((p) => (p.type === "text" ? { type: "text", text: p.text } : imageBlock(p.url)));
}

/** A tool call's arguments as the Messages API's `input` object (arguments that are not a JSON object become `{}`). */
function inputOf(args: string): unknown {
  try {
    const value = JSON.parse(args || "{}") as unknown;
    return value && typeof value === "object" && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * The Messages API wants system text apart, turns that start with the user and alternate;
 * the chat history is trimmed oldest-first, so it may start with a reply or repeat a role.
 * Tool calls become `tool_use` blocks of the assistant's turn, tool results `tool_result`
 * blocks of a user turn, image parts image blocks.
 */
export function toAnthropicMessages(messages: ChatMessage[]) {
  const system = messages.filter((m) => m.role === "system").map((m) => textOf(m.content)).join("\n\n");
  const turns: Array<{ role: "user" | "assistant"; content: string | Block[] }> = [];
  for (const m of messages) {
    if (m.role === "system") continue;
    const role = m.role === "assistant" ? "assistant" : "user";
    let content: string | Block[];
    if (m.role === "tool") {
      const result = typeof m.content === "string" ? m.content : contentBlocks(m.content);
      content = [{ type: "tool_result", tool_use_id: m.toolCallId, content: result }];
    } else if (m.role === "assistant" && m.toolCalls && m.toolCalls.length > 0) {
      content = [...contentBlocks(m.content), ...m.toolCalls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: inputOf(c.arguments) }))];
    } else {
      content = typeof m.content === "string" ? m.content : contentBlocks(m.content);
    }
    const last = turns[turns.length - 1];
    if (last?.role === role) {
      last.content =
        typeof last.content === "string" && typeof content === "string"
          ? `${last.content}\n\n${content}`
          : [...asBlocks(last.content), ...asBlocks(content)];
    } else if (turns.length > 0 || role === "user") {
      turns.push({ role, content });
    }
  }
  return { system: system || undefined, messages: turns };
}

function asBlocks(content: string | Block[]): Block[] {
  return typeof content === "string" ? contentBlocks(content) : content;
}

/** The tool that stands in for response_format: the model answers by calling it, and its input is the reply. */
function responseTool(format: ModelTooling["responseFormat"]): { name: string; description: string; input_schema: unknown } | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") {
    return { name: "json_response", description: "Give your whole answer as this tool's input: one JSON object.", input_schema: { type: "object" } };
  }
  return {
    name: format.name,
    description: format.description ?? "Give your whole answer as this tool's input, matching its schema.",
    input_schema: format.schema ?? { type: "object" },
  };
}

/**
 * Tools, tool choice and response_format on the Messages API's terms. It has no
 * response_format: a JSON answer is asked for as a call to a tool whose input schema is
 * the format's, forced when the caller's own tools are not in play, and that call's input
 * is passed on as the reply's text.
 */
export function toAnthropicTooling(tooling: ModelTooling): { body: Record<string, unknown>; responseToolName?: string } {
  const tools: Block[] = (tooling.tools ?? []).map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    input_schema: t.parameters ?? { type: "object", properties: {} },
  }));
  const response = responseTool(tooling.responseFormat);
  const choice = tooling.toolChoice;
  let toolChoice: Block | undefined;
  if (response) {
    const callerTools = tools.length > 0 && choice !== "none";
    tools.push(response);
    if (!callerTools) toolChoice = { type: "tool", name: response.name };
    else if (choice === undefined || choice === "auto" || choice === "required") toolChoice = { type: "any" };
    else toolChoice = { type: "tool", name: (choice as { name: string }).name };
  } else if (tools.length > 0 && choice !== undefined) {
    toolChoice = choice === "auto" ? { type: "auto" } : choice === "none" ? { type: "none" } : choice === "required" ? { type: "any" } : { type: "tool", name: choice.name };
  }
  if (toolChoice && tooling.parallelToolCalls === false && toolChoice.type !== "none") toolChoice.disable_parallel_tool_use = true;
  const body: Record<string, unknown> = {};
  if (tools.length > 0) body.tools = tools;
  if (toolChoice) body.tool_choice = toolChoice;
  return { body, ...(response ? { responseToolName: response.name } : {}) };
}

/** Anthropic's Messages API (Claude), streaming or not. */
export function anthropicAdapter(options: AnthropicOptions): ModelAdapter {
  const url = `${options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`;
  return {
    complete: (request) => completeMessage(options, url, request),
    stream: (request) => streamMessage(options, url, request),
  };
}

/** Posts a request to the Messages API at `url`; a reply that is not 2xx is an UpstreamError. */
async function postMessages(options: AnthropicOptions, url: string, request: ModelRequest, stream: boolean, tooling: Record<string, unknown>) {
  const { messages, sampling = {}, signal } = request;
  const res = await fetchUpstream(options.fetch ?? globalFetch, url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": options.apiKey,
      "anthropic-version": API_VERSION,
      accept: stream ? "text/event-stream" : "application/json",
    },
    body: JSON.stringify({
      model: options.model,
      ...toAnthropicSampling(sampling, options.maxTokens ?? 4096),
      ...toAnthropicMessages(messages),
      ...tooling,
      stream,
    }),
    signal,
  });
  if (!res.ok) throw await upstreamStatusError(res, options.apiKey);
  return res;
}

async function completeMessage(options: AnthropicOptions, url: string, request: ModelRequest): Promise<string> {
  const { body: tooling, responseToolName } = toAnthropicTooling(request);
  const res = await postMessages(options, url, request, false, tooling);
  const reply = await upstreamJson<MessagesReply>(res, request.signal);
  if (!Array.isArray(reply.content)) throw new UpstreamError("the Messages API reply has no content");
  const { text, toolCalls } = replyContent(reply.content, responseToolName);
  request.onOutcome?.(outcomeOf(reply.stop_reason, reply.usage?.input_tokens, reply.usage?.output_tokens, toolCalls));
  return text;
}

/** A whole reply's text (the response_format stand-in's input among it) and its tool calls, if any. */
function replyContent(content: ContentBlock[], responseToolName: string | undefined): { text: string; toolCalls?: ToolCall[] } {
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const block of content) {
    if (block.type === "text") text += block.text ?? "";
    else if (block.type === "tool_use" && responseToolName !== undefined && block.name === responseToolName) text += JSON.stringify(block.input ?? {});
    else if (block.type === "tool_use") toolCalls.push({ id: block.id ?? `toolu_${toolCalls.length}`, name: block.name ?? "", arguments: JSON.stringify(block.input ?? {}) });
  }
  return { text, toolCalls: toolCalls.length > 0 ? toolCalls : undefined };
}

async function streamMessage(options: AnthropicOptions, url: string, request: ModelRequest): Promise<AsyncIterable<StreamPiece>> {
  const { body: tooling, responseToolName } = toAnthropicTooling(request);
  const res = await postMessages(options, url, request, true, tooling);
  if (!res.body) throw new UpstreamError("the Messages API stream has no body");
  return messageStream(res.body, request, responseToolName);
}

/** What a streamed reply has said so far: its outcome at message_stop, and what its content blocks are. */
interface MessageStreamState {
  responseToolName?: string;
  stopReason?: string | null;
  inputTokens?: number;
  outputTokens?: number;
  calls: ReturnType<typeof toolCallCollector>;
  // Content blocks by index: a tool call (its index among the reply's calls), or the response_format stand-in.
  toolIndex: Map<number, number>;
  jsonBlocks: Set<number>;
}

/** The reply's pieces from the Messages API's events, its outcome reported at message_stop. */
async function* messageStream(body: ByteStream, request: ModelRequest, responseToolName: string | undefined): AsyncGenerator<StreamPiece> {
  const state: MessageStreamState = { responseToolName, calls: toolCallCollector(), toolIndex: new Map(), jsonBlocks: new Set() };
  try {
    for await (const event of readServerSentEvents(body)) {
      const data = parseStreamEvent(event.data);
      const type = data.type ?? event.event;
      if (type === "error") {
        throw new UpstreamError(`the Messages API reported an error mid-stream: ${JSON.stringify(data.error).slice(0, 300)}`);
      }
      if (type === "message_stop") return request.onOutcome?.(outcomeOf(state.stopReason, state.inputTokens, state.outputTokens, state.calls.calls()));
      const piece = pieceOf(type, data, state);
      if (piece !== undefined) yield piece;
    }
  } catch (err) {
    throw asUpstreamFailure(err, request.signal);
  }
  throw asUpstreamFailure(new UpstreamError("the Messages API stream ended before message_stop"), request.signal);
}

function parseStreamEvent(data: string): StreamEvent {
  try {
    return JSON.parse(data) as StreamEvent;
  } catch {
    throw new UpstreamError(`the Messages API sent an event that is not JSON: ${data.slice(0, 100)}`);
  }
}

/** Takes in one event of the stream; returns the piece of the reply it carries, if any. */
function pieceOf(type: string | undefined, data: StreamEvent, state: MessageStreamState): StreamPiece | undefined {
  const block = data.index ?? -1;
  if (type === "content_block_start" && data.content_block?.type === "tool_use") return startToolUse(block, data.content_block, state);
  if (type === "content_block_delta" && data.delta?.type === "text_delta" && data.delta.text) return data.delta.text;
  if (type === "content_block_delta" && data.delta?.type === "input_json_delta" && data.delta.partial_json) {
    if (state.jsonBlocks.has(block)) return data.delta.partial_json;
    if (state.toolIndex.has(block)) return addToolCall({ index: state.toolIndex.get(block)!, arguments: data.delta.partial_json }, state);
  }
  if (type === "message_start") state.inputTokens = data.message?.usage?.input_tokens;
  if (type === "message_delta") {
    state.stopReason = data.delta?.stop_reason ?? state.stopReason;
    state.outputTokens = data.usage?.output_tokens ?? state.outputTokens;
  }
  return undefined;
}

/** A tool_use block begins: the response_format stand-in (its input is the reply's text), or a call of the reply. */
function startToolUse(block: number, content: ContentBlock, state: MessageStreamState): StreamPiece | undefined {
  if (state.responseToolName !== undefined && content.name === state.responseToolName) {
    state.jsonBlocks.add(block);
    return undefined;
  }
  const index = state.toolIndex.size;
  state.toolIndex.set(block, index);
  return addToolCall({ index, id: content.id ?? `toolu_${index}`, name: content.name ?? "", arguments: "" }, state);
}

function addToolCall(delta: ToolCallDelta, state: MessageStreamState): StreamPiece {
  state.calls.add(delta);
  return { toolCall: delta };
}
