import type { Context, MiddlewareHandler } from "hono";

/** API.md: JSON is `application/json; charset=utf-8`. */
const JSON_UTF8 = "application/json; charset=utf-8";

type HeaderRecord = Record<string, string | string[]>;

/**
 * Keeps this request's response headers in a plain object, and makes the response helpers
 * (`c.header`, `body`, `text`, `json`, `html`, `newResponse`, `status`) build responses
 * around it. Hono's own helpers keep headers in a WHATWG Headers object; @hono/node-server
 * writes a Response whose headers are a plain object straight to the socket, but a Headers
 * object costs WebIDL checks, sorting and copying: ~20 µs of a ~140 µs plant request. On
 * Workers a plain object is what Response takes anyway. Headers set with `c.header()` go
 * on every response of the request, including one a handler builds itself (added on its
 * way out, here) and the error reply. Registered first, so every later middleware's
 * `c.header()` lands here.
 */
export const plainResponseHeaders: MiddlewareHandler = async (c, next) => {
  const headers: Record<string, string> = {};
  const made = new WeakSet<Response>();
  let status: number | undefined;

  c.header = ((name: string, value?: string, options?: { append?: boolean }) => {
    const key = name.toLowerCase();
    if (value === undefined) delete headers[key];
    else if (options?.append && headers[key] !== undefined) headers[key] += `, ${value}`;
    else headers[key] = value;
  }) as Context["header"];
  c.status = ((code: number) => {
    status = code;
  }) as Context["status"];

  const respond = (data: BodyInit | null, arg?: number | ResponseInit, extra?: HeaderRecord, type?: string): Response => {
    const init = typeof arg === "object" ? arg : undefined;
    const merged: Record<string, string> = { ...headers };
    if (type !== undefined) merged["content-type"] = type;
    if (init?.headers) for (const [name, value] of new Headers(init.headers)) merged[name] = value;
    if (extra) for (const name in extra) merged[name.toLowerCase()] = [extra[name]!].flat().join(", ");
    const response = new Response(data, { status: typeof arg === "number" ? arg : (init?.status ?? status ?? 200), statusText: init?.statusText, headers: merged });
    made.add(response);
    return response;
  };
  c.body = ((data: BodyInit | null, arg?: number | ResponseInit, extra?: HeaderRecord) => respond(data, arg, extra)) as Context["body"];
  c.newResponse = c.body as Context["newResponse"];
  c.text = ((text: string, arg?: number | ResponseInit, extra?: HeaderRecord) => respond(text, arg, extra, "text/plain; charset=UTF-8")) as Context["text"];
  c.json = ((object: unknown, arg?: number | ResponseInit, extra?: HeaderRecord) => respond(JSON.stringify(object), arg, extra, JSON_UTF8)) as Context["json"];
  c.html = ((html: string, arg?: number | ResponseInit, extra?: HeaderRecord) => respond(html, arg, extra, "text/html; charset=UTF-8")) as Context["html"];

  await next();

  // A response built elsewhere (a static file, the CORS preflight) gets what it lacks.
  if (made.has(c.res)) return;
  const missing = Object.keys(headers).filter((name) => !c.res.headers.has(name));
  if (missing.length === 0) return;
  const res = new Response(c.res.body, c.res);
  for (const name of missing) res.headers.set(name, headers[name]!);
  c.res = undefined;
  c.res = res;
};
