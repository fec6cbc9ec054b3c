import { parse } from "lossless-json";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../deps";
import { ApiError } from "./errors";
import { excerpt } from "../errors";

/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How much of an overlong body of unknown length (chunked) is still read and dropped after
 * the 413, so that a client that writes its whole body before it reads gets the reply
 * rather than a connection reset. On Node, @hono/node-server drains a body left unread
 * (one of declared length, refused from its header) the same way, up to 64 MiB and for
 * half a second after the reply, then closes the connection.
 */
const DISCARD_BYTES = 64 * 1024 * 1024;

const tooLarge = () => new ApiError("body_too_large", `the request body is over the ${MAX_BODY_BYTES / 1024} KiB limit`);

/** JSON's media type and its `+json` relatives (`application/merge-patch+json`), without parameters. */
const JSON_TYPE = /^application\/([\w.+-]+\+)?json$/i;

/** Whether a Content-Type header names JSON (parameters such as charset aside). */
export function isJsonContentType(contentType: string): boolean {
  return JSON_TYPE.test(contentType.split(";")[0]!.trim());
}

export const UNSUPPORTED_MEDIA_TYPE = "the request body must be JSON sent with 'Content-Type: application/json'";

/**
 * The body's bytes, at most MAX_BODY_BYTES. A body of declared length is judged by its
 * Content-Length before a byte is read (and read with `c.req.arrayBuffer()`, which on Node
 * @hono/node-server reads straight from the socket); a chunked one is counted as it
 * streams, and past the limit the rest is dropped as it arrives (see DISCARD_BYTES).
 */
async function readBody(c: Context): Promise<Uint8Array> {
  const length = c.req.header("Content-Length");
  if (length !== undefined && c.req.header("Transfer-Encoding") === undefined) {
    if (Number.parseInt(length, 10) > MAX_BODY_BYTES) throw tooLarge();
    return new Uint8Array(await c.req.arrayBuffer());
  }
  const body = c.req.raw.body;
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      void discard(reader, size);
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** Reads the rest of a refused body and drops it, up to DISCARD_BYTES in all. */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>, read: number): Promise<void> {
  try {
    while (read <= DISCARD_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // The client went away, or the runtime ended the request: nothing is left to drop.
  }
}

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
 * `messages[1].content`: where a value sits in the body (the keys and indexes down to it),
 * as a client would write it. A key is quoted as an excerpt, like every echo of input: the
 * message stays short however long the key.
 */
function pathOf(at: ReadonlyArray<string | number>): string {
  let path = "";
  for (const key of at) {
    if (typeof key === "number") {
      path += `[${key}]`;
      continue;
    }
    const step = /^[A-Za-z_$][\w$]*$/.test(key) ? excerpt(key) : `"${excerpt(key.replace(/["\\]/g, "\\$&"))}"`;
    path = path === "" ? step : `${path}.${step}`;
  }
  return path;
}

const refusal = (at: ReadonlyArray<string | number>, problem: string) => new ApiError("invalid_request", `${pathOf(at) || "the request body"}: ${problem}`);

/**
 * Refuses the first string (value or object key) that could not be stored faithfully. The
 * keys and indexes down to the value are kept in `at`, and written out as a path only for
 * the message of a refusal: every request's body passes through here.
 */
function refuseUnstorable(value: unknown, at: Array<string | number> = []): void {
  if (typeof value === "string") {
    const problem = unstorable(value);
    if (problem) throw refusal(at, problem);
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      at.push(i);
      refuseUnstorable(item, at);
      at.pop();
    }
  } else if (value !== null && typeof value === "object" && !(value instanceof InexactInteger)) {
    for (const [key, item] of Object.entries(value)) {
      const problem = unstorable(key);
      if (problem) throw refusal(at, `a key ${problem}`);
      at.push(key);
      refuseUnstorable(item, at);
      at.pop();
    }
  }
}

/**
 * The request body as JSON, read once and exactly (see parseNumber), for every request that
 * can carry one: `c.get("jsonBody")`, which each route's own schema then validates (see
 * json-body-route.ts). An empty body reads as `{}`; a non-empty body that is not JSON is a
 * 415; malformed JSON, invalid UTF-8 or a string that cannot be stored is a 400; over
 * MAX_BODY_BYTES, a 413. Hono's own JSON reading (`c.req.json()`) is JSON.parse, which
 * rounds integers past 2^53, so no validator here uses it.
 */
export const readJsonBody = createMiddleware<AppEnv>(async (c, next) => {
  let bytes: Uint8Array;
  try {
    bytes = await readBody(c);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("invalid_request", "the request body was cut short: the connection closed before its end");
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new ApiError("invalid_request", "the request body is not valid UTF-8 text");
  }
  let value: unknown = {};
  if (text.trim() !== "") {
    if (!isJsonContentType(c.req.header("Content-Type") ?? "")) throw new ApiError("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE);
    try {
      value = parse(text, null, parseNumber);
      refuseUnstorable(value);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof RangeError) throw new ApiError("invalid_request", "the request body is nested too deeply");
      const detail = err instanceof Error ? err.message.replace(/\s+/g, " ").slice(0, 120) : "";
      throw new ApiError("invalid_request", `the request body is not valid JSON${detail ? ` (${detail})` : ""}`);
    }
  }
  c.set("jsonBody", value);
  await next();
});
