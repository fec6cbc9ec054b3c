/** The one error the app throws on purpose; app.onError turns it into the Error body. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: 400 | 401 | 402 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503 | 504,
    message: string,
    /** Extra reply headers, e.g. Retry-After on 402 and 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The `{ error, message }` body of every error reply. */
export interface ErrorBody {
  error: number;
  message: string;
}
