import createClient, { type Middleware } from "openapi-fetch";
import { dropSession, readSession } from "../auth/session";
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

/** An error reply of the API, in its `{ error, message }` shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Headers = new Headers(),
  ) {
    super(message);
  }
}

/** Called when the API says the session is no longer valid (401). */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void) {
  onUnauthorized = handler;
}

/** Credit headers arrive on every charged reply: whoever shows the counter listens here. */
let onCreditHeaders: (remaining: number, resetAt: string) => void = () => {};
export function setCreditHeadersHandler(handler: (remaining: number, resetAt: string) => void) {
  onCreditHeaders = handler;
}

const auth: Middleware = {
  onRequest({ request }) {
    const session = readSession();
    if (session && !request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${session.token}`);
    return request;
  },
  onResponse({ response }) {
    noticeResponse(response);
    return response;
  },
};

/** Shared by the typed client and the few raw fetches (streams, uploads). */
export function noticeResponse(response: Response) {
  const remaining = response.headers.get("X-Credits-Remaining");
  const reset = response.headers.get("X-Credits-Reset");
  if (remaining !== null && reset) onCreditHeaders(Number(remaining), reset);
  if (response.status === 401) {
    dropSession();
    onUnauthorized();
  }
}

/** The typed client of the service's public API (types generated from its OpenAPI document). */
export const api = createClient<paths>({ baseUrl: location.origin });
api.use(auth);

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
  return new ApiError(response.status, message, response.headers);
}

/** Authorization headers for requests the typed client cannot make (multipart, public pages). */
export function authHeaders(): Record<string, string> {
  const session = readSession();
  return session ? { Authorization: `Bearer ${session.token}` } : {};
}
