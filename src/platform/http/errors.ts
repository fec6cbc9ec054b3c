import { HTTPException } from "hono/http-exception";

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503 | 504 | 507;

export interface ApiErrorOptions {
  /** Stable machine-readable code; by default the status's generic one (see error-mapper.ts). */
  code?: string;
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
  readonly code: string | undefined;
  readonly headers: Record<string, string>;
  readonly field: string | null;
  constructor(status: ErrorStatus, message: string, options: ApiErrorOptions = {}) {
    super(status, { message });
    this.status = status;
    this.code = options.code;
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
