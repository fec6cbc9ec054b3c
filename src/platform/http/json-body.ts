import { parse } from "lossless-json";
import { bodyLimit } from "hono/body-limit";
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../deps";
import { ApiError } from "./errors";
import { excerpt } from "../errors";

/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

// The rest of the body is still on its way, unread. Rather than read and discard up to a
// megabyte more, the connection is closed after this reply, and the reply says so, so a
// pooled client opens a new one instead of writing its next request into a closed socket.
// (Workers own the connection and ignore this header.)
const tooLarge = (): never => {
  throw new ApiError(413, `the request body is over the ${MAX_BODY_BYTES / 1024} KiB limit`, { headers: { Connection: "close" } });
};

const countedBodyLimit = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge });

/**
 * Hono's body limit, with a body of declared length judged by its Content-Length first, as
 * Hono then does too: Hono looks at `c.req.raw.body` before the header, and on Node that
 * alone makes @hono/node-server build a WHATWG Request and a web stream around the socket
 * (see src/platform/node/socket-request.ts). A chunked body is counted by Hono as it streams.
 */
export const limitBodySize: MiddlewareHandler = (c, next) => {
  const length = c.req.header("Content-Length");
  if (length === undefined || c.req.header("Transfer-Encoding") !== undefined) return countedBodyLimit(c, next);
  return Number.parseInt(length, 10) > MAX_BODY_BYTES ? tooLarge() : next();
};

const JSON_TYPE = /^application\/([\w.+-]+\+)?json$/i;

/**
 * A number literal with a fraction that a double rounds to an integer, such as
 * `100.000000000000000001`. It is kept apart so that an int64 field refuses it instead of
 * reading 100; number fields see an object and refuse it too (no real client sends one).
 */
export class InexactInteger {
  constructor(readonly literal: string) {}
}

/**
 * Numbers without losing precision: an integer outside the safe range becomes a bigint
 * (plant ids are int64), an exact integer written with a fraction or exponent (`1.0`,
 * `1e3`) is that integer, and anything else is a double as usual.
 */
export function parseNumber(literal: string): number | bigint | InexactInteger {
  const exact = exactInteger(literal);
  if (exact !== null) return Number.isSafeInteger(Number(exact)) ? Number(exact) : exact;
  const value = Number(literal);
  return Number.isInteger(value) ? new InexactInteger(literal) : value;
}

/** The integer a JSON number literal denotes exactly, or null when it has a fraction. */
function exactInteger(literal: string): bigint | null {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) return null;
  const [, sign, int, frac = "", exp = "0"] = m;
  const shift = Number(exp) - frac.length;
  const digits = (int! + frac).replace(/^0+(?=\d)/, "");
  // Far past int64 either way: no exact reading is needed to refuse it.
  if (shift > 40 || digits.length + shift > 40) return null;
  if (shift >= 0) return BigInt(`${sign}${digits}${"0".repeat(shift)}`);
  const cut = digits.length + shift;
  if (!/^0*$/.test(digits.slice(Math.max(cut, 0)))) return null;
  return BigInt(`${sign}${cut > 0 ? digits.slice(0, cut) : "0"}`);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Why a string cannot be stored as sent, or null. Lone surrogates (`"\ud800"`) have no
 * UTF-8 form. U+0000 is stored by SQLite, but the embedded libSQL binding reads such text
 * back cut at the first NUL and SQLite leaves functions over it (length, FTS5) undefined:
 * refused, so that nothing is acknowledged that would read back differently.
 */
function unstorable(text: string): string | null {
  if (text.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (!text.isWellFormed()) return "has an unpaired UTF-16 surrogate escape; send valid Unicode text";
  return null;
}

/**
 * `messages[1].content`: where a value sits in the body, as a client would write it. A key
 * is quoted as an excerpt, like every echo of input: the message stays short however long
 * the key.
 */
function pathOf(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  const step = /^[A-Za-z_$][\w$]*$/.test(key) ? excerpt(key) : `"${excerpt(key.replace(/["\\]/g, "\\$&"))}"`;
  return path === "" ? step : `${path}.${step}`;
}

/** Refuses the first string (value or object key) that could not be stored faithfully. */
function refuseUnstorable(value: unknown, path = ""): void {
  if (typeof value === "string") {
    const problem = unstorable(value);
    if (problem) throw new ApiError(400, `${path || "the request body"}: ${problem}`);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => refuseUnstorable(item, pathOf(path, i)));
  } else if (value !== null && typeof value === "object" && !(value instanceof InexactInteger)) {
    for (const [key, item] of Object.entries(value)) {
      const problem = unstorable(key);
      if (problem) throw new ApiError(400, `${path || "the request body"}: a key ${problem}`);
      refuseUnstorable(item, pathOf(path, key));
    }
  }
}

/**
 * Parses JSON bodies once, exactly (see parseNumber). Validators downstream call
 * `c.req.json()`, which is pointed at this parse (and `text()`, `arrayBuffer()` at the
 * body). An empty body reads as `{}`; a non-empty body that is not JSON is a 415;
 * malformed JSON or invalid UTF-8 is a 400.
 */
export const parseJsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return next();
  let text: string;
  try {
    const bytes = await (c.get("deps").readBody?.(c) ?? c.req.arrayBuffer());
    text = strictUtf8.decode(bytes);
    // The body is read once, here (perhaps from the socket, past the Request): every later
    // reader of it gets what was read.
    c.req.arrayBuffer = () => Promise.resolve(bytes instanceof ArrayBuffer ? bytes : (bytes.slice().buffer as ArrayBuffer));
  } catch {
    throw new ApiError(400, "the request body is not valid UTF-8 text");
  }
  c.req.text = () => Promise.resolve(text);
  let value: unknown = {};
  if (text.trim() !== "") {
    const mediaType = (c.req.header("Content-Type") ?? "").split(";")[0]!.trim();
    if (!JSON_TYPE.test(mediaType)) {
      throw new ApiError(415, "the request body must be JSON sent with 'Content-Type: application/json'");
    }
    try {
      value = parse(text, null, parseNumber);
      refuseUnstorable(value);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof RangeError) throw new ApiError(400, "the request body is nested too deeply");
      const detail = err instanceof Error ? err.message.replace(/\s+/g, " ").slice(0, 120) : "";
      throw new ApiError(400, `the request body is not valid JSON${detail ? ` (${detail})` : ""}`);
    }
  }
  c.req.json = <T>() => Promise.resolve(value as T);
  await next();
});
