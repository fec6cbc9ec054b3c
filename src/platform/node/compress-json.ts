import type { MiddlewareHandler } from "hono";
import { promisify } from "node:util";
import { gzip } from "node:zlib";

const gzipped = promisify(gzip);

/**
 * gzips the API's JSON replies of at least `threshold` bytes for clients that accept it, as
 * web-files.ts does the web client's files: on Node nothing else would (the Worker's replies
 * are compressed at Cloudflare's edge). `GET /models` is 3.1 KiB as JSON and 0.7 KiB gzipped.
 * A request that does not accept gzip (API clients, the benchmarks) passes straight through;
 * a JSON reply is whole in memory already, so it is measured before it is compressed, and a
 * small one goes as it was. Streams (SSE) and replies that carry an encoding are left alone.
 */
export function compressJson(options: { threshold?: number } = {}): MiddlewareHandler {
  const threshold = options.threshold ?? 1024;
  return async (c, next) => {
    if (c.req.method === "HEAD" || !/\bgzip\b/i.test(c.req.header("Accept-Encoding") ?? "")) return next();
    await next();
    const reply = c.res;
    if (!reply.body || reply.headers.has("Content-Encoding") || !/^application\/json\b/i.test(reply.headers.get("Content-Type") ?? "")) return;
    const body = new Uint8Array(await reply.arrayBuffer());
    c.res = new Response(body.byteLength < threshold ? body : new Uint8Array(await gzipped(body)), reply);
    c.res.headers.append("Vary", "Accept-Encoding");
    if (body.byteLength < threshold) return;
    c.res.headers.set("Content-Encoding", "gzip");
    c.res.headers.delete("Content-Length");
  };
}
