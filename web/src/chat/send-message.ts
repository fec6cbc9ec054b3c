import { ApiError, authedFetch, noticeResponse, type Credits } from "../api/client";
import type { paths } from "../api/schema";

type SendBody = paths["/chat/send"]["post"]["requestBody"]["content"]["application/json"];
type RegenerateBody = NonNullable<paths["/contexts/{id}/messages/{messageId}/regenerate"]["post"]["requestBody"]>["content"]["application/json"];

export interface DoneEvent {
  model: string;
  contextId: string;
  /** The stored reply, and the message it answers. */
  messageId: string;
  parentId: string;
  credits: Credits;
}

type StreamOptions = { idempotencyKey: string; signal: AbortSignal; onDelta: (text: string) => void };

/** Sends a message (POST /chat/send) and streams the reply; see streamExchange. */
export function sendMessage(body: Omit<SendBody, "stream">, options: StreamOptions): Promise<DoneEvent> {
  return streamExchange("/chat/send", { ...body, stream: true } satisfies SendBody, options);
}

/** Asks for another reply to the message a reply answers, and streams it; see streamExchange. */
export function regenerateReply(contextId: string, messageId: string, body: Omit<RegenerateBody, "stream">, options: StreamOptions): Promise<DoneEvent> {
  const path = `/contexts/${encodeURIComponent(contextId)}/messages/${encodeURIComponent(messageId)}/regenerate`;
  return streamExchange(path, { ...body, stream: true } satisfies RegenerateBody, options);
}

/**
 * Posts a charged exchange with `stream: true` and reads the server-sent events with fetch
 * and a ReadableStream (EventSource cannot POST nor send a header). `onDelta` gets each
 * piece of text as it arrives. Rejects with ApiError for an error reply or an `error`
 * event, and with the abort reason when `signal` aborts (the server then refunds it).
 */
async function streamExchange(path: string, body: object, options: StreamOptions): Promise<DoneEvent> {
  const response = await authedFetch(
    new Request(path, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "text/event-stream",
        "Idempotency-Key": options.idempotencyKey,
      },
      body: JSON.stringify(body),
      signal: options.signal,
    }),
  );
  noticeResponse(response);
  if (!response.ok || !response.body) {
    const error = (await response.json().catch(() => null)) as { message?: string } | null;
    throw new ApiError(response.status, error?.message ?? `the server answered ${response.status}`, response.headers);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      let event = "message";
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length === 0) continue;
      const payload = JSON.parse(data.join("\n")) as Record<string, unknown>;
      if (event === "done") return payload as unknown as DoneEvent;
      if (event === "error") throw new ApiError(Number(payload.error) || 502, String(payload.message ?? "the model failed"));
      if (typeof payload.delta === "string") options.onDelta(payload.delta);
    }
  }
  throw new ApiError(502, "the reply broke off before it finished; nothing was charged");
}
