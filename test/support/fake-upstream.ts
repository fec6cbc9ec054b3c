import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { TITLE_INSTRUCTIONS } from "../../src/features/chat/titles";

/**
 * How the upstream behaves: answer, fail with a 5xx, refuse the key (401), answer 429 (rate
 * limited), stall until the client gives up, break off a stream after its first pieces, or
 * send its first pieces and then stall.
 */
export type UpstreamMode = "ok" | "fail" | "unauthorized" | "rate-limited" | "slow" | "fail-mid-stream" | "stall-mid-stream";

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: {
    model?: string;
    stream?: boolean;
    // Text, or (images, tool results) the protocol's content parts.
    messages: Array<{ role: string; content: any; tool_calls?: any[]; tool_call_id?: string }>;
    system?: string;
    max_tokens?: number;
    tools?: any[];
    tool_choice?: any;
    response_format?: any;
    [field: string]: unknown;
  };
}

/** A reply with tool calls (and maybe text): `input` is each call's arguments object. */
export interface ToolReply {
  text?: string;
  toolCalls: Array<{ name: string; input: Record<string, unknown> }>;
}

export interface RecordedTranscription {
  headers: IncomingMessage["headers"];
  fields: Record<string, string>;
  file: { name: string; type: string; bytes: Uint8Array };
}

export interface FakeUpstream {
  /** OpenAI-compatible base URL, ending in /v1. */
  baseUrl: string;
  /** Anthropic-style API origin (…/v1/messages is served too). */
  origin: string;
  mode: UpstreamMode;
  /** When set, a streamed reply (OpenAI protocol) sends its pieces this many ms apart, as a slow model does. */
  pieceDelayMs?: number;
  /**
   * A streamed reply (OpenAI protocol) this says to hold goes on after its text, a word
   * every pieceDelayMs (100 ms if unset: well within any timeout a test sets), until
   * releaseHeld() or a POST to /test/release-held (from another process) ends it: a reply
   * that streams for exactly as long as the test needs, whatever the machine's speed.
   */
  holds?: (request: RecordedRequest) => boolean;
  /** Like `holds`, for a reply that only ends when its client hangs up: releaseHeld() does not end it. */
  endless?: (request: RecordedRequest) => boolean;
  /** Ends the replies being held (see `holds`). */
  releaseHeld(): void;
  /** The reply for a request: text (default: `echo: <last user message>`), or tool calls. */
  reply: (request: RecordedRequest) => string | ToolReply;
  /** The models GET /v1/models (OpenAI's or Anthropic's shape) and Ollama's GET /api/tags list. */
  models: string[];
  /** What Ollama's POST /api/show says each model can do (default: completion only). */
  capabilities: Record<string, string[]>;
  /** GET requests received (model lists), oldest first. */
  listings: string[];
  /** Requests received, oldest first (without the title requests). */
  requests: RecordedRequest[];
  /**
   * What a request for a new context's title (src/features/chat/titles.ts) gets; default:
   * nothing (an empty reply), which leaves the context named after its first message.
   */
  title: (request: RecordedRequest) => string | Promise<string>;
  /** Title requests are answered apart from the others: "ok", or "fail" (a 500); `mode` does not touch them. */
  titleMode: "ok" | "fail";
  /** Title requests received, oldest first. */
  titleRequests: RecordedRequest[];
  /** Requests whose client hung up before the reply was complete. */
  cancelled(): number;
  /** TCP connections clients have opened so far. */
  connections(): number;
  /** Called as each request arrives (tests snapshot database round trips here). */
  onRequest?: (request: RecordedRequest) => void;
  /** What POST /v1/audio/transcriptions answers (mode "fail" makes it a 500 too). */
  transcript: string;
  /** When set, the transcription reply reports this duration in seconds (`usage`), as OpenAI does. */
  transcriptionSeconds?: number;
  /** Transcription requests received, oldest first. */
  transcriptions: RecordedTranscription[];
  /** A failing reply carries this, to prove it never reaches the service's clients. */
  readonly secretInErrors: string;
  close(): Promise<void>;
}

const SECRET = "upstream-internal-detail-sk-live-0123456789";

/** A request the service makes for a new context's title, in either protocol. */
function isTitleRequest(request: RecordedRequest): boolean {
  const first = request.body.messages?.[0];
  return request.body.system === TITLE_INSTRUCTIONS || (first?.role === "system" && first.content === TITLE_INSTRUCTIONS);
}

/** A real OpenAI chat-completions (and Anthropic Messages) server on 127.0.0.1. */
export async function startFakeUpstream(options: { record?: boolean } = {}): Promise<FakeUpstream> {
  const record = options.record ?? true;
  let cancelled = 0;
  // How each reply being held is let go.
  const held: Array<() => void> = [];
  const upstream: FakeUpstream = {
    baseUrl: "",
    origin: "",
    mode: "ok",
    reply: (req) => `echo: ${echoed([...req.body.messages].reverse().find((m) => m.role === "user")?.content ?? "")}`,
    models: [],
    capabilities: {},
    listings: [],
    requests: [],
    title: () => "",
    titleMode: "ok",
    titleRequests: [],
    transcript: "water the monstera on sunday",
    transcriptions: [],
    cancelled: () => cancelled,
    releaseHeld: () => {
      for (const release of held.splice(0)) release();
    },
    connections: () => connections,
    secretInErrors: SECRET,
    close: () => Promise.resolve(),
  };

  const server = createServer((req, res) => {
    if (req.method === "POST" && req.url === "/v1/audio/transcriptions") return void transcribe(req, res);
    if (req.method === "POST" && req.url === "/test/release-held") {
      upstream.releaseHeld();
      return void req.resume().on("end", () => res.writeHead(204).end());
    }
    if (req.method === "GET") return void list(req, res);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: RecordedRequest["body"];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RecordedRequest["body"];
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad json"}}');
        return;
      }
      const request: RecordedRequest = { path: req.url ?? "", headers: req.headers, body };
      const protocol = req.url === "/v1/messages" ? "anthropic" : "openai";
      if (isTitleRequest(request)) {
        if (record) upstream.titleRequests.push(request);
        if (upstream.titleMode === "fail") return void res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"no title today"}}');
        return void Promise.resolve(upstream.title(request)).then((title) => answer(title, request, res, protocol));
      }
      if (record) upstream.requests.push(request);
      upstream.onRequest?.(request);
      res.on("close", () => {
        if (!res.writableFinished) cancelled++;
      });
      if (req.method === "POST" && req.url === "/v1/chat/completions") return handle(request, res, "openai");
      if (req.method === "POST" && req.url === "/v1/messages") return handle(request, res, "anthropic");
      if (req.method === "POST" && req.url === "/api/show") {
        const capabilities = upstream.capabilities[String(body.model)] ?? ["completion"];
        return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ capabilities, details: { family: "llama" } }));
      }
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"no such route"}}');
    });
  });

  /** The model lists: OpenAI's and Anthropic's GET /v1/models, Ollama's GET /api/tags. */
  function list(req: IncomingMessage, res: ServerResponse) {
    upstream.listings.push(req.url ?? "");
    req.resume();
    if (upstream.mode === "fail") return void res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"down"}}');
    const json = (body: unknown) => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    const path = (req.url ?? "").replace(/\?.*$/, "");
    if (path === "/api/tags") {
      return json({ models: upstream.models.map((name) => ({ name, model: name, digest: `sha256:${name}`, details: { family: "llama" } })) });
    }
    if (path === "/v1/models" && req.headers["anthropic-version"]) {
      return json({ data: upstream.models.map((id) => ({ id, type: "model", display_name: id.toUpperCase(), created_at: "2026-01-01T00:00:00Z" })), has_more: false });
    }
    if (path === "/v1/models") return json({ object: "list", data: upstream.models.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })) });
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"no such route"}}');
  }

  /** OpenAI's speech to text: multipart in, `{ text }` out. */
  async function transcribe(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let form: FormData;
    try {
      const headers = { "content-type": req.headers["content-type"] ?? "" };
      form = await new Request("http://upstream/", { method: "POST", headers, body: Buffer.concat(chunks) }).formData();
    } catch {
      return void res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad multipart"}}');
    }
    const file: unknown = form.get("file");
    if (!(file instanceof File)) return void res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"no file"}}');
    const fields = Object.fromEntries([...form.entries()].filter(([, v]) => typeof v === "string")) as Record<string, string>;
    upstream.transcriptions.push({ headers: req.headers, fields, file: { name: file.name, type: file.type, bytes: new Uint8Array(await file.arrayBuffer()) } });
    if (upstream.mode === "fail") {
      res.writeHead(500, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ error: { message: `internal failure (${SECRET})`, type: "server_error" } }));
    }
    if (upstream.mode === "slow") return;
    const usage = upstream.transcriptionSeconds === undefined ? {} : { usage: { type: "duration", seconds: upstream.transcriptionSeconds } };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: upstream.transcript, ...usage }));
  }

  function handle(request: RecordedRequest, res: ServerResponse, protocol: "openai" | "anthropic") {
    switch (upstream.mode) {
      case "fail":
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `internal failure (${SECRET})`, type: "server_error" } }));
        return;
      case "unauthorized":
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "invalid api key", type: "authentication_error" } }));
        return;
      case "rate-limited":
        res.writeHead(429, { "content-type": "application/json", "retry-after": "20" });
        res.end(JSON.stringify({ error: { message: "rate limit reached", type: "rate_limit_error" } }));
        return;
      case "slow":
        // Never answers: the service's timeout (or the client) must give up.
        return;
    }
    answer(upstream.reply(request), request, res, protocol);
  }

  function answer(reply: string | ToolReply, request: RecordedRequest, res: ServerResponse, protocol: "openai" | "anthropic") {
    const { text, toolCalls } = typeof reply === "string" ? { text: reply, toolCalls: [] } : { text: reply.text ?? "", toolCalls: reply.toolCalls };
    const calls = toolCalls.map((c, i) => ({ id: `call_${i}_${c.name}`, name: c.name, input: c.input }));
    if (request.body.stream) {
      if (calls.length > 0) return streamToolCalls(text, calls, res, protocol);
      // Held until released; or, `endless`, until the client hangs up (no release reaches it).
      const hold = upstream.holds?.(request)
        ? new Promise<void>((resolve) => held.push(resolve))
        : upstream.endless?.(request)
          ? new Promise<void>((resolve) => res.once("close", () => resolve()))
          : undefined;
      const includeUsage = (request.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      return stream(text, res, protocol, upstream.pieceDelayMs ?? (hold && 100), hold, includeUsage);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify(
        protocol === "openai"
          ? {
              id: "chatcmpl-fake",
              object: "chat.completion",
              created: Math.floor(Date.now() / 1000),
              model: request.body.model,
              choices: [
                {
                  index: 0,
                  message: {
                    role: "assistant",
                    content: calls.length > 0 && text === "" ? null : text,
                    ...(calls.length > 0
                      ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.input) } })) }
                      : {}),
                  },
                  finish_reason: calls.length > 0 ? "tool_calls" : "stop",
                },
              ],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }
          : {
              id: "msg_fake",
              type: "message",
              role: "assistant",
              model: request.body.model,
              content: [
                ...(text ? [{ type: "text", text }] : []),
                ...calls.map((c) => ({ type: "tool_use", id: c.id.replace("call", "toolu"), name: c.name, input: c.input })),
              ],
              stop_reason: calls.length > 0 ? "tool_use" : "end_turn",
            },
      ),
    );
  }

  /** A streamed reply with tool calls: each call's arguments arrive in two pieces, as providers split them. */
  function streamToolCalls(text: string, calls: Array<{ id: string; name: string; input: Record<string, unknown> }>, res: ServerResponse, protocol: "openai" | "anthropic") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const halves = (input: Record<string, unknown>) => {
      const json = JSON.stringify(input);
      const cut = Math.floor(json.length / 2);
      return [json.slice(0, cut), json.slice(cut)];
    };
    if (protocol === "openai") {
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: "assistant", content: text || null }, null));
      calls.forEach((c, index) => {
        const [first, second] = halves(c.input);
        res.write(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }, null));
        res.write(chunk({ tool_calls: [{ index, function: { arguments: first } }] }, null));
        res.write(chunk({ tool_calls: [{ index, function: { arguments: second } }] }, null));
      });
      res.write(chunk({}, "tool_calls"));
      res.end("data: [DONE]\n\n");
    } else {
      const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
      res.write(event("message_start", { message: { id: "msg_fake", role: "assistant", content: [], usage: { input_tokens: 3 } } }));
      let block = 0;
      if (text) {
        res.write(event("content_block_start", { index: block, content_block: { type: "text", text: "" } }));
        res.write(event("content_block_delta", { index: block, delta: { type: "text_delta", text } }));
        res.write(event("content_block_stop", { index: block++ }));
      }
      for (const c of calls) {
        const [first, second] = halves(c.input);
        res.write(event("content_block_start", { index: block, content_block: { type: "tool_use", id: c.id.replace("call", "toolu"), name: c.name, input: {} } }));
        res.write(event("content_block_delta", { index: block, delta: { type: "input_json_delta", partial_json: first } }));
        res.write(event("content_block_delta", { index: block, delta: { type: "input_json_delta", partial_json: second } }));
        res.write(event("content_block_stop", { index: block++ }));
      }
      res.write(event("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } }));
      res.end(event("message_stop", {}));
    }
  }

  function stream(text: string, res: ServerResponse, protocol: "openai" | "anthropic", pieceDelayMs?: number, hold?: Promise<void>, includeUsage = false) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const pieces = text.match(/\S+\s*|\s+/g) ?? [""];
    const failing = upstream.mode === "fail-mid-stream";
    const stalling = upstream.mode === "stall-mid-stream";
    const sent = failing || stalling ? pieces.slice(0, 2) : pieces;
    if (protocol === "openai") {
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: "assistant" }, null));
      if (pieceDelayMs && !failing && !stalling) {
        const delay = pieceDelayMs;
        let holding = hold !== undefined;
        void hold?.then(() => (holding = false));
        void (async () => {
          // Its pieces at the pace of a slow model, then (held) a word at a time until released.
          for (let i = 0; i < sent.length || holding; i++) {
            if (res.destroyed) return; // the client hung up
            res.write(chunk({ content: i < sent.length ? sent[i] : " more" }, null));
            await new Promise((r) => setTimeout(r, delay));
          }
          res.write(chunk({}, "stop"));
          res.end("data: [DONE]\n\n");
        })();
        return;
      }
      // A failing upstream breaks off once its first pieces have left, as a crashed one would.
      const breakOff = () => res.destroy();
      for (const [i, piece] of sent.entries()) res.write(chunk({ content: piece }, null), failing && i === sent.length - 1 ? breakOff : undefined);
      if (failing) return;
      if (stalling) return;
      res.write(chunk({}, "stop"));
      // Asked with stream_options.include_usage, as OpenAI does: a last chunk with no choices and the counts.
      if (includeUsage) res.write(`data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 7, completion_tokens: pieces.length, total_tokens: 7 + pieces.length } })}\n\n`);
      res.end("data: [DONE]\n\n");
    } else {
      const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
      res.write(event("message_start", { message: { id: "msg_fake", role: "assistant", content: [] } }));
      res.write(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
      const breakOff = () => res.destroy();
      for (const [i, piece] of sent.entries()) res.write(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }), failing && i === sent.length - 1 ? breakOff : undefined);
      if (failing) return;
      if (stalling) return;
      res.write(event("content_block_stop", { index: 0 }));
      res.write(event("message_delta", { delta: { stop_reason: "end_turn" } }));
      res.end(event("message_stop", {}));
    }
  }

  let connections = 0;
  server.on("connection", () => connections++);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  upstream.origin = `http://127.0.0.1:${port}`;
  upstream.baseUrl = `${upstream.origin}/v1`;
  upstream.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return upstream;
}

/** A message's content as the default reply repeats it: text as it is, an image part as `[image <its type>]`. */
function echoed(content: unknown): string {
  if (!Array.isArray(content)) return String(content);
  return content
    .map((p: { type: string; text?: string; image_url?: { url: string }; source?: { media_type: string } }) =>
      p.type === "text" ? p.text : `[image ${p.image_url?.url.match(/^data:([^;]+)/)?.[1] ?? p.source?.media_type ?? "url"}]`,
    )
    .join("\n");
}
