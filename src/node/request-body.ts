import type { IncomingMessage } from "node:http";
import { buffer } from "node:stream/consumers";
import type { Context } from "hono";

/**
 * A request's body read straight from the socket. Reading it through `c.req` makes
 * @hono/node-server build a WHATWG Request around the socket and a web stream for its body,
 * which cost about 6% of a chat message's CPU. Only a body of declared length is read here:
 * its size was checked against the limit from Content-Length, and the socket delivers no
 * more than that; a chunked body goes through `c.req`, where the body limit counts it as it
 * streams. Undefined when this request did not come from @hono/node-server's socket.
 */
export function readBodyFromSocket(c: Context): Promise<Uint8Array> | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming || incoming.headers["content-length"] === undefined || incoming.headers["transfer-encoding"] !== undefined) return undefined;
  return buffer(incoming);
}
