import { statusOf, type ErrorCode } from "../error-codes";
import { serve, type ServerType } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

/** All request headers together, the request line included. */
export const MAX_HEADER_BYTES = 64 * 1024;

/** An app's fetch, as @hono/node-server calls it. */
type Fetch = Parameters<typeof serve>[0]["fetch"];

/**
 * Serves an app over HTTP/1.1 on Node, with the socket-level behaviour the Node server
 * promises (see docs/limits-and-errors.md). The server, the tests and the benchmarks serve
 * through this.
 */
export function serveNode(fetch: Fetch, options: { port: number; hostname: string }, onListening?: (info: AddressInfo) => void): ServerType {
  const server = serve(
    // Node's default of 16 KiB of headers refuses real access tokens: identity providers issue
    // 8–20 KB JWTs when they carry group claims.
    { fetch, port: options.port, hostname: options.hostname, serverOptions: { maxHeaderSize: MAX_HEADER_BYTES } },
    onListening,
  );
  // Each connection's replies not yet finished, in the order Node writes them (pipelined
  // requests are answered in turn), for a parse error that comes after them.
  const replies = new WeakMap<Duplex, ServerResponse[]>();
  const unfinished = (socket: Duplex): ServerResponse[] => {
    const list = replies.get(socket) ?? [];
    while (list[0]?.writableFinished) list.shift();
    return list;
  };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const list = unfinished(req.socket);
    if (list.length === 0) replies.set(req.socket, list);
    list.push(res);
  });
  server.on("clientError", (err: Error & { code?: string }, socket: Duplex) => answerClientError(err, socket, () => unfinished(socket)[0]));
  return server;
}

/**
 * The client's address on Node: the socket's peer, or, behind a reverse proxy that says so
 * in CLIENT_IP_HEADER, the last entry of that header (the one the proxy itself added).
 * X-Forwarded-For and the like are never trusted unless configured: any client can send
 * them. Undefined for a request that came through no socket (app.request in tests).
 */
export function nodeClientAddress(header: string | undefined): (c: Context) => string | undefined {
  return (c) => {
    const forwarded = header ? c.req.header(header)?.split(",").at(-1)?.trim() : undefined;
    if (forwarded) return forwarded;
    return (c.env as { incoming?: unknown } | undefined)?.incoming ? getConnInfo(c).remote.address : undefined;
  };
}

/**
 * What the HTTP parser refuses never reaches the app, and Node would answer it with a bare
 * status line. Answer with the Error body instead, then close the connection, since the
 * rest of its stream cannot be framed. Replies still in flight for earlier, complete
 * pipelined requests go first, so that the error is not taken as their answer; a reply
 * already started for the broken request itself cannot be amended, only cut off.
 * `current` gives the reply Node is writing on the connection now, if any.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex, current: () => ServerResponse | undefined): void {
  const inFlight = current();
  if (inFlight?.req.complete) {
    inFlight.once("close", () => (inFlight.writableFinished ? answerClientError(err, socket, current) : socket.destroy()));
    return;
  }
  if (err.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [code, reason, message]: [ErrorCode, string, string] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? ["headers_too_large", "Request Header Fields Too Large", `the request headers are over the ${MAX_HEADER_BYTES / 1024} KiB limit; send a shorter token, cookie or query string`]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? ["request_timeout", "Request Timeout", "the request did not arrive in time"]
        : ["malformed_request", "Bad Request", `the request is not valid HTTP/1.1 (${err.code ?? "parse error"}); check its framing and headers`];
  const status = statusOf(code);
  const body = JSON.stringify({ error: status, message, code });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
