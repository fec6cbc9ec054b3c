import { HTTPException } from "hono/http-exception";
import { statusOf, type ErrorCode, type ErrorStatus } from "../error-codes";

export type { ErrorStatus };

export interface ApiErrorOptions {
  /** Extra reply headers, e.g. `WWW-Authenticate` on 401. */
  headers?: Record<string, string>;
  /** The request field it is about, for surfaces that name it (OpenAI's `param`). */
  field?: string | null;
}

/**
 * An error of the HTTP layer itself: a request the routes or middleware refuse before any
 * service sees it (bad credentials, a malformed body, an unknown path). It is Hono's
 * HTTPException, so Hono's own middleware and ours fail the same way. Services throw
 * DomainErrors instead (src/platform/errors.ts); app.onError renders both.
 */
export class ApiError extends HTTPException {
  override name = "ApiError";
  override readonly status: ErrorStatus;
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;
  readonly field: string | null;
  /** `code`: one of the list (src/platform/error-codes.ts), which gives the status. */
  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    const status = statusOf(code);
    super(status, { message });
    this.status = status;
    this.code = code;
    this.headers = options.headers ?? {};
    this.field = options.field ?? null;
  }
}

/** The body of every error reply outside /v1. */
export interface ErrorBody {
  error: number;
  message: string;
  code?: string;
}
