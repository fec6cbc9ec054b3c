import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";

// A request as @hono/node-server received it, read from its socket rather than through
// `c.req.raw`: the first touch of that makes @hono/node-server build a WHATWG Request
// around the socket (its headers, an AbortController, a web stream for the body), which
// cost about 6% of a chat message's CPU.
type NodeBindings = { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;

/**
 * The request's body. Only a body of declared length is read here: its size was checked
 * against the limit from Content-Length, and the socket delivers no more than that; a
 * chunked body goes through `c.req`, where the body limit counts it as it streams.
 * Undefined when this request did not come from @hono/node-server's socket.
 */
export function readBodyFromSocket(c: Context): Promise<Uint8Array> | undefined {
  const incoming = (c.env as NodeBindings)?.incoming;
  if (!incoming || incoming.headers["content-length"] === undefined || incoming.headers["transfer-encoding"] !== undefined) return undefined;
  return collect(incoming);
}

async function collect(incoming: IncomingMessage): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  // Fails if the client goes away before the body's end.
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * A signal aborted when the client goes away before its response is finished, as
 * @hono/node-server aborts `c.req.raw.signal`. Undefined when this request did not come
 * from @hono/node-server's socket.
 */
export function clientGoneFromSocket(c: Context): AbortSignal | undefined {
  const { incoming, outgoing } = (c.env as NodeBindings) ?? {};
  if (!incoming || !outgoing) return undefined;
  const gone = new AbortController();
  outgoing.once("close", () => {
    if (incoming.errored) gone.abort(incoming.errored.toString());
    else if (!outgoing.writableFinished) gone.abort("Client connection prematurely closed.");
  });
  return gone.signal;
}
