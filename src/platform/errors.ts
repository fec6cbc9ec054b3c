// ---------------------------------------------------------------------------------------
// Errors in the domain's words. A service that refuses or fails throws a DomainError: a
// stable machine-readable `code` clients may branch on, from the one list of codes
// (error-codes.ts, which also says each code's status), and one sentence a person can act
// on. Services know no HTTP: the edge (src/platform/http/error-mapper.ts) turns the code
// into a status and the details into headers, for each surface.
// ---------------------------------------------------------------------------------------

import type { ErrorCode } from "./error-codes";

export interface ErrorDetail {
  /** When retrying may succeed, in seconds. */
  retryAfterSeconds?: number;
  /** The request field the error is about, e.g. `model`. */
  field?: string;
  /** The caller's credits as they stand, when the error is about them. */
  credits?: { remaining: number; resetAt: string };
}

export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    /** Stable, machine-readable, snake_case: `credits_used_up`, `context_not_found`, … */
    readonly code: ErrorCode,
    message: string,
    readonly detail: ErrorDetail = {},
  ) {
    super(message);
  }
}

const EXCERPT_CHARS = 60;
// Built once: the bundle's target spells a \p{…} literal as `new RegExp(…)`, which inside
// the callback below built one for every character of every excerpt.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u;

/**
 * What a client sent, fit to quote in an error message: at most 60 characters (then `…`),
 * control and invisible formatting characters escaped, so a message stays one short,
 * printable line whatever was sent.
 */
export function excerpt(text: string): string {
  const chars = Array.from(text);
  const shown = chars.length > EXCERPT_CHARS ? chars.slice(0, EXCERPT_CHARS) : chars;
  const escaped = shown
    .map((ch) => (INVISIBLE.test(ch) ? `\\u${ch.codePointAt(0)!.toString(16).padStart(4, "0")}` : ch))
    .join("");
  return chars.length > EXCERPT_CHARS ? `${escaped}…` : escaped;
}

/**
 * An error and its causes, outermost first, at most five deep: libraries wrap the error
 * that says what happened (drizzle's "Failed query" holds the driver's, with its code).
 */
export function causeChain(err: unknown): Error[] {
  const chain: Error[] = [];
  for (let e = err; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  return chain;
}
