import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * How the upstream behaves: answer, fail with a 5xx, refuse the key (401), stall until the
 * client gives up, break off a stream after its first pieces, or send its first pieces
 * and then stall.
 */
export type UpstreamMode = "ok" | "fail" | "unauthorized" | "slow" | "fail-mid-stream" | "stall-mid-stream";

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: {
    model?: string;
    stream?: boolean;
    messages: Array<{ role: string; content: string }>;
    system?: string;
    max_tokens?: number;
  };
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
  /** The reply text for a request; default: `echo: <last user message>`. */
  reply: (request: RecordedRequest) => string;
  /** Requests received, oldest first. */
  requests: RecordedRequest[];
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

/** A real OpenAI chat-completions (and Anthropic Messages) server on 127.0.0.1. */
export async function startFakeUpstream(options: { record?: boolean } = {}): Promise<FakeUpstream> {
  const record = options.record ?? true;
  let cancelled = 0;
  const upstream: FakeUpstream = {
    baseUrl: "",
    origin: "",
    mode: "ok",
    reply: (req) => `echo: ${[...req.body.messages].reverse().find((m) => m.role === "user")?.content ?? ""}`,
    requests: [],
    transcript: "water the monstera on sunday",
    transcriptions: [],
    cancelled: () => cancelled,
    connections: () => connections,
    secretInErrors: SECRET,
    close: () => Promise.resolve(),
  };

  const server = createServer((req, res) => {
    if (req.method === "POST" && req.url === "/v1/audio/transcriptions") return void transcribe(req, res);
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
      if (record) upstream.requests.push(request);
      upstream.onRequest?.(request);
      res.on("close", () => {
        if (!res.writableFinished) cancelled++;
      });
      if (req.method === "POST" && req.url === "/v1/chat/completions") return handle(request, res, "openai");
      if (req.method === "POST" && req.url === "/v1/messages") return handle(request, res, "anthropic");
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"no such route"}}');
    });
  });

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
      case "slow":
        // Never answers: the service's timeout (or the client) must give up.
        return;
    }
    const text = upstream.reply(request);
    if (request.body.stream) return stream(text, res, protocol);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify(
        protocol === "openai"
          ? {
              id: "chatcmpl-fake",
              object: "chat.completion",
              created: Math.floor(Date.now() / 1000),
              model: request.body.model,
              choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
              usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
            }
          : {
              id: "msg_fake",
              type: "message",
              role: "assistant",
              model: request.body.model,
              content: [{ type: "text", text }],
              stop_reason: "end_turn",
            },
      ),
    );
  }

  function stream(text: string, res: ServerResponse, protocol: "openai" | "anthropic") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const pieces = text.match(/\S+\s*|\s+/g) ?? [""];
    const failing = upstream.mode === "fail-mid-stream";
    const stalling = upstream.mode === "stall-mid-stream";
    const sent = failing || stalling ? pieces.slice(0, 2) : pieces;
    if (protocol === "openai") {
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: "assistant" }, null));
      if (upstream.pieceDelayMs && !failing && !stalling) {
        const delay = upstream.pieceDelayMs;
        void (async () => {
          for (const piece of sent) {
            res.write(chunk({ content: piece }, null));
            await new Promise((r) => setTimeout(r, delay));
          }
          res.write(chunk({}, "stop"));
          res.end("data: [DONE]\n\n");
        })();
        return;
      }
      for (const piece of sent) res.write(chunk({ content: piece }, null));
      // Break off once the first pieces have surely left, as a crashed upstream would.
      if (failing) return void setTimeout(() => res.destroy(), 50);
      if (stalling) return;
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
    } else {
      const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
      res.write(event("message_start", { message: { id: "msg_fake", role: "assistant", content: [] } }));
      res.write(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
      for (const piece of sent) res.write(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }));
      if (failing) return void setTimeout(() => res.destroy(), 50);
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
