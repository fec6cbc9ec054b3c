import { HTTPException } from "hono/http-exception";

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503 | 504;

/**
 * The one error the app throws on purpose. It is Hono's HTTPException, so Hono's own
 * middleware and ours fail the same way; app.onError renders it in the body of the
 * surface that was asked (the Error body, or OpenAI's on /v1).
 */
export class ApiError extends HTTPException {
  override name = "ApiError";
  override readonly status: ErrorStatus;
  constructor(
    status: ErrorStatus,
    message: string,
    /** Extra reply headers, e.g. Retry-After on 402 and 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(status, { message });
    this.status = status;
  }
}

/** The `{ error, message }` body of every error reply. */
export interface ErrorBody {
  error: number;
  message: string;
}

const EXCERPT_CHARS = 60;

/**
 * What a client sent, fit to quote in an error message: at most 60 characters (then `…`),
 * control and invisible formatting characters escaped, so a message stays one short,
 * printable line whatever was sent.
 */
export function excerpt(text: string): string {
  const chars = Array.from(text);
  const shown = chars.length > EXCERPT_CHARS ? chars.slice(0, EXCERPT_CHARS) : chars;
  const escaped = shown
    .map((ch) => (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u.test(ch) ? `\\u${ch.codePointAt(0)!.toString(16).padStart(4, "0")}` : ch))
    .join("");
  return chars.length > EXCERPT_CHARS ? `${escaped}…` : escaped;
}
