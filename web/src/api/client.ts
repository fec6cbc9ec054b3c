import createClient, { type Middleware } from "openapi-fetch";
import { freshToken, refreshSession, sessionEnded } from "../auth/session";
import { accountSuspended } from "../auth/suspension";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Profile = Schemas["Profile"];
export type Preferences = Schemas["Preferences"];
export type Model = Schemas["Model"];
export type Credits = Schemas["Credits"];
export type Context = Schemas["Context"];
export type Message = Schemas["Message"];
export type Group = Schemas["Group"];
export type ApiKey = Schemas["ApiKey"];

/** An error reply of the API, in its `{ error, message, code }` shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Headers = new Headers(),
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Credit headers arrive on every charged reply: whoever shows the counter listens here. */
let onCreditHeaders: (remaining: number, resetAt: string) => void = () => {};
export function setCreditHeadersHandler(handler: (remaining: number, resetAt: string) => void) {
  onCreditHeaders = handler;
}

const notice: Middleware = {
  onResponse({ response }) {
    noticeResponse(response);
    return response;
  },
};

/** The credit headers of a reply: shared by the typed client and the few raw fetches (streams, uploads). */
export function noticeResponse(response: Response) {
  const remaining = response.headers.get("X-Credits-Remaining");
  const reset = response.headers.get("X-Credits-Reset");
  if (remaining !== null && reset) onCreditHeaders(Number(remaining), reset);
}

/**
 * fetch with the session's access token, renewed first when it is about to expire. A 401
 * (the token expired meanwhile, or its session was ended elsewhere) renews it and retries
 * the request once; a 401 after that ends the session here. The request is copied before
 * it is sent, so that its body can go again. Without a session, the request goes as it is.
 */
export async function authedFetch(input: Request): Promise<Response> {
  const token = await freshToken();
  if (!token) return noticeSuspension(await fetch(input));
  const retry = input.clone();
  input.headers.set("Authorization", `Bearer ${token}`);
  const response = await fetch(input);
  if (response.status !== 401) return noticeSuspension(response);
  const renewed = await refreshSession();
  if (renewed) {
    await response.body?.cancel();
    retry.headers.set("Authorization", `Bearer ${renewed.token}`);
    const again = await fetch(retry);
    if (again.status !== 401) return noticeSuspension(again);
    await again.body?.cancel();
  }
  sessionEnded();
  return response;
}

/**
 * A 403 `account_suspended` (a request of the suspended account, or its sign-in) puts the app
 * on the page that says so. The reply is read from a copy: its caller reads it as usual.
 */
async function noticeSuspension(response: Response): Promise<Response> {
  if (response.status !== 403) return response;
  const body = (await response.clone().json().catch(() => null)) as { code?: unknown; message?: unknown } | null;
  if (body?.code === "account_suspended" && typeof body.message === "string") accountSuspended(body.message);
  return response;
}

/** The typed client of the service's public API (types generated from its OpenAPI document). */
export const api = createClient<paths>({ baseUrl: location.origin, fetch: authedFetch });
api.use(notice);

/** Unwraps an openapi-fetch result: the data, or an ApiError with the server's message. */
export async function must<T>(promise: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await promise;
  if (response.ok) return data as T;
  throw toApiError(response, error);
}

export function toApiError(response: Response, body: unknown): ApiError {
  const message =
    body && typeof body === "object" && "message" in body && typeof body.message === "string"
      ? body.message
      : `the server answered ${response.status} ${response.statusText}`.trim();
  const code = body && typeof body === "object" && "code" in body && typeof body.code === "string" ? body.code : undefined;
  return new ApiError(response.status, message, response.headers, code);
}

