import { parse, parseNumberAndBigInt } from "lossless-json";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./deps";
import { ApiError } from "./errors";

/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

export const limitBodySize = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw new ApiError(413, `the request body is over the ${MAX_BODY_BYTES / 1024} KiB limit`);
  },
});

const JSON_TYPE = /^application\/([\w.+-]+\+)?json$/i;

/**
 * Parses JSON bodies once, without losing precision: an integer outside the safe range
 * becomes a bigint (plant ids are int64) instead of a rounded number. Validators downstream
 * call `c.req.json()`, which is pointed at this parse. A non-empty body that is not JSON
 * is a 415; malformed JSON is a 400.
 */
export const parseJsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return next();
  const text = await c.req.text();
  if (text.trim() === "") return next();

  const mediaType = (c.req.header("Content-Type") ?? "").split(";")[0]!.trim();
  if (!JSON_TYPE.test(mediaType)) {
    throw new ApiError(415, "the request body must be JSON sent with 'Content-Type: application/json'");
  }
  let value: unknown;
  try {
    value = parse(text, null, parseNumberAndBigInt);
  } catch (err) {
    const detail = err instanceof Error ? err.message.replace(/\s+/g, " ").slice(0, 120) : "";
    throw new ApiError(400, `the request body is not valid JSON${detail ? ` (${detail})` : ""}`);
  }
  c.req.json = <T>() => Promise.resolve(value as T);
  await next();
});
