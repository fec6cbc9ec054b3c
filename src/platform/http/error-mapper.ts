import { HTTPException } from "hono/http-exception";
import { GENERIC_CODE, statusOf, type ErrorCode } from "../error-codes";
import { causeChain, DomainError } from "../errors";
import { ApiError, type ErrorBody, type ErrorStatus } from "./errors";

/** An error as the HTTP edge answers it, before a surface shapes its body. */
export interface HttpError {
  status: ErrorStatus;
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
  field: string | null;
}

/**
 * A fault of the database's storage, from the driver's SQLite code anywhere in the error's
 * causes (drizzle wraps the driver's error): the disk full, the file read-only, or a write
 * the file system refused. None is the server's bug, and none saved anything.
 */
function storageFault(err: unknown): HttpError | undefined {
  for (const e of causeChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (code === "SQLITE_FULL") {
      return { status: statusOf("storage_full"), code: "storage_full", message: "the server's disk is full: nothing was saved; try again once the operator has freed space", headers: {}, field: null };
    }
    if (code === "SQLITE_READONLY") {
      return { status: statusOf("storage_read_only"), code: "storage_read_only", message: "the server's database is read-only: nothing was saved; reading still works", headers: { "Retry-After": "60" }, field: null };
    }
    // Files made immutable under the server (chattr +i), a failing disk: SQLite cannot write.
    if (typeof code === "string" && code.startsWith("SQLITE_IOERR")) {
      return { status: 503, code: "storage_unavailable", message: "the server's database storage cannot be written: nothing was saved; reading may still work", headers: { "Retry-After": "60" }, field: null };
    }
  }
  return undefined;
}

/**
 * The one place an error becomes a status, headers and a code: a service's DomainError by
 * its kind (Retry-After and the credit headers from its details), an ApiError as it says,
 * Hono's own HTTPExceptions under 500 as they say. Anything else is a fault of the server:
 * `onFault` logs it, and the caller gets a generic 500 naming the request id.
 */
export function toHttpError(err: unknown, requestId: string, onFault: (err: unknown) => void): HttpError {
  if (err instanceof DomainError) {
    const status = statusOf(err.code);
    const headers: Record<string, string> = {};
    const { retryAfterSeconds, credits, field } = err.detail;
    if (retryAfterSeconds !== undefined) headers["Retry-After"] = String(retryAfterSeconds);
    if (credits) Object.assign(headers, creditHeaders(credits));
    // RFC 6750: every 401 names its scheme, so a client knows to sign in again.
    if (status === 401) headers["WWW-Authenticate"] = 'Bearer realm="api", error="invalid_token"';
    return { status, code: err.code, message: err.message, headers, field: field ?? null };
  }
  if (err instanceof ApiError) {
    return { status: err.status, code: err.code, message: err.message, headers: err.headers, field: err.field };
  }
  if (err instanceof HTTPException && err.status < 500) {
    const status = (err.status in GENERIC_CODE ? err.status : 400) as ErrorStatus;
    return { status, code: GENERIC_CODE[status], message: err.message || "bad request", headers: {}, field: null };
  }
  const storage = storageFault(err);
  if (storage) {
    onFault(err); // the operator must hear of it
    return storage;
  }
  onFault(err);
  return {
    status: 500,
    code: "internal_error",
    message: `internal error; quote request id ${requestId} when reporting it`,
    headers: {},
    field: null,
  };
}

/** X-Credits-Remaining and X-Credits-Reset: a charged reply's, or a 402's. */
export function creditHeaders(credits: { remaining: number; resetAt: string }): Record<string, string> {
  return { "X-Credits-Remaining": String(credits.remaining), "X-Credits-Reset": credits.resetAt };
}

/** The Error body of every surface but /v1. */
export function errorBody(error: HttpError): ErrorBody {
  return { error: error.status, message: error.message, code: error.code };
}
