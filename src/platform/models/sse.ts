import { createParser, type EventSourceMessage } from "eventsource-parser";

/** One server-sent event: its `event:` name (when given) and its joined `data:` lines. */
export type ServerSentEvent = Pick<EventSourceMessage, "event" | "data">;

/** An upstream body: a fetch Response's ReadableStream, or undici's Readable on Node. */
export type ByteStream = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/**
 * Parses a text/event-stream body into events (eventsource-parser reads it as the SSE
 * spec does). An event cut off by the end of the body still counts, as the upstreams we
 * read sometimes end without the final blank line.
 */
export async function* readServerSentEvents(body: ByteStream, signal?: AbortSignal): AsyncGenerator<ServerSentEvent> {
  const chunks = "getReader" in body ? readerChunks(body, signal) : body;
  const decoder = new TextDecoder();
  let events: ServerSentEvent[] = [];
  const parser = createParser({ onEvent: (e) => void events.push(e.event === undefined ? { data: e.data } : { event: e.event, data: e.data }) });
  for await (const chunk of chunks) {
    if (signal?.aborted) throw signal.reason;
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (events.length === 0) continue;
    const ready = events;
    events = [];
    yield* ready;
  }
  parser.feed(decoder.decode());
  parser.reset({ consume: true });
  yield* events;
  if (signal?.aborted) throw signal.reason;
}

/** A ReadableStream's chunks; the signal cancels it, for sources (a binding's stream) that fetch does not own. */
async function* readerChunks(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
    await reader.cancel().catch(() => {});
  }
}
