// ---------------------------------------------------------------------------------------
// Every error code the service answers with, in one typed list: its HTTP status and, where
// OpenAI's clients need something else, how /v1 answers it. Services throw DomainErrors
// naming a code (src/platform/errors.ts), the HTTP layer ApiErrors; the error mapper, /v1
// and the test of docs/api.md's table (test/error-codes.test.ts) all read this list, so a
// code cannot answer one status here and be documented with another.
// ---------------------------------------------------------------------------------------

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 408 | 409 | 413 | 415 | 422 | 429 | 431 | 500 | 502 | 503 | 504 | 507;

/** How /v1 answers a code, where it differs from the default of its status (OPENAI_BY_STATUS). */
interface OpenAiShape {
  status?: ErrorStatus;
  type?: string;
  /** OpenAI's `code`; the service's own code when it is one OpenAI's clients know by that name. */
  code?: string | null;
}

interface ErrorSpec {
  status: ErrorStatus;
  openai?: OpenAiShape;
}

/** The codes, by family; docs/api.md's table says what each means. */
export const ERROR_CODES = {
  // The generic code of each status, for errors that name none of their own.
  invalid_request: { status: 400 },
  unauthenticated: { status: 401 },
  forbidden: { status: 403 },
  not_found: { status: 404 },
  method_not_allowed: { status: 405 },
  conflict: { status: 409 },
  body_too_large: { status: 413 },
  unsupported_media_type: { status: 415 },
  unprocessable: { status: 422 },
  rate_limited: { status: 429 },
  internal_error: { status: 500 },
  upstream_failed: { status: 502 },
  unavailable: { status: 503 },
  upstream_timeout: { status: 504 },
  // The Node server's refusals of a request's HTTP framing, before routing.
  headers_too_large: { status: 431 },
  malformed_request: { status: 400 },
  request_timeout: { status: 408 },
  // Credits and models.
  credits_used_up: { status: 402 },
  model_over_allowance: { status: 402 },
  model_not_found: { status: 400, openai: { status: 404, code: "model_not_found" } },
  model_not_configured: { status: 503 },
  model_unreachable: { status: 503 },
  model_without_tools: { status: 400 },
  model_without_images: { status: 400 },
  model_without_json: { status: 400 },
  model_failed: { status: 502 },
  model_timeout: { status: 504 },
  cancelled: { status: 400 },
  reply_lost: { status: 503 },
  idempotency_key_in_use: { status: 409 },
  idempotency_key_reused: { status: 422 },
  // Contexts and the things people own.
  context_not_found: { status: 404, openai: { code: "context_not_found" } },
  message_not_found: { status: 404 },
  parent_not_a_reply: { status: 400 },
  not_a_reply: { status: 400 },
  import_invalid: { status: 400 },
  group_not_found: { status: 404 },
  plant_not_found: { status: 404 },
  api_key_not_found: { status: 404 },
  share_not_found: { status: 404 },
  plant_exists: { status: 409 },
  group_exists: { status: 409 },
  api_key_limit: { status: 400 },
  api_key_not_allowed: { status: 403 },
  unknown_url: { status: 404, openai: { code: "unknown_url" } },
  // Signing in and sessions.
  identity_provider_unavailable: { status: 503 },
  wallet_message_invalid: { status: 401 },
  wallet_domain_mismatch: { status: 401 },
  wallet_message_expired: { status: 401 },
  wallet_nonce_unknown: { status: 401 },
  wallet_nonce_used: { status: 401 },
  wallet_nonce_expired: { status: 401 },
  wallet_signature_invalid: { status: 401 },
  wallet_rpc_unavailable: { status: 503 },
  provider_token_invalid: { status: 401 },
  sign_in_method_not_offered: { status: 400 },
  sessions_not_configured: { status: 503 },
  refresh_token_missing: { status: 401 },
  refresh_token_invalid: { status: 401 },
  session_expired: { status: 401 },
  refresh_token_reused: { status: 401 },
  origin_not_allowed: { status: 403 },
  session_not_found: { status: 404 },
  identity_not_found: { status: 404 },
  identity_in_use: { status: 409 },
  last_sign_in_method: { status: 409 },
  too_many_failed_authentications: { status: 429 },
  too_many_sign_ins: { status: 429 },
  local_login_loopback_only: { status: 403 },
  // Who may sign up.
  sign_up_limited: { status: 429 },
  sign_up_closed: { status: 403 },
  invite_required: { status: 403 },
  invite_invalid: { status: 403 },
  turnstile_required: { status: 403 },
  turnstile_failed: { status: 403 },
  turnstile_unavailable: { status: 503 },
  // Attachments.
  attachment_type: { status: 415 },
  attachment_too_large: { status: 413 },
  attachment_quota: { status: 413 },
  document_without_text: { status: 422 },
  attachment_not_found: { status: 404 },
  attachments_not_configured: { status: 503 },
  // The operator's console: admins, suspension, plans, keys with limits, erasure.
  admin_only: { status: 403 },
  account_suspended: { status: 403 },
  user_not_found: { status: 404 },
  invite_not_found: { status: 404 },
  plan_not_found: { status: 400 },
  model_not_in_plan: { status: 403 },
  plan_rate_limit: { status: 429 },
  api_key_credit_limit: { status: 402 },
  api_key_expired: { status: 401 },
  model_not_allowed_for_key: { status: 403 },
  confirmation_mismatch: { status: 422 },
  // Voice and storage.
  speech_to_text_not_configured: { status: 503 },
  storage_full: { status: 507 },
  storage_read_only: { status: 503 },
  storage_unavailable: { status: 503 },
  database_file_lost: { status: 503 },
  // The operator's monitoring (GET /metrics).
  metrics_forbidden: { status: 403 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The generic code of each status. */
export const GENERIC_CODE: Record<ErrorStatus, ErrorCode> = {
  400: "invalid_request",
  401: "unauthenticated",
  402: "credits_used_up",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "request_timeout",
  409: "conflict",
  413: "body_too_large",
  415: "unsupported_media_type",
  422: "unprocessable",
  429: "rate_limited",
  431: "headers_too_large",
  500: "internal_error",
  502: "upstream_failed",
  503: "unavailable",
  504: "upstream_timeout",
  507: "storage_full",
};

/** A code's status. */
export function statusOf(code: ErrorCode): ErrorStatus {
  return ERROR_CODES[code].status;
}

/**
 * OpenAI's `type` and default `code` by status. The `openai` SDK picks its error class by
 * status alone (400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 404 NotFoundError, 409 ConflictError, 422 UnprocessableEntityError, 429 RateLimitError,
 * 5xx InternalServerError, anything else the base APIError), so the statuses are the
 * service's own; 402 stays 402 (an APIError whose code is `insufficient_quota`), which
 * the SDK, unlike a 429, does not retry.
 */
export const OPENAI_BY_STATUS: Partial<Record<ErrorStatus, { type: string; code: string | null }>> = {
  400: { type: "invalid_request_error", code: null },
  401: { type: "authentication_error", code: "invalid_api_key" },
  402: { type: "insufficient_quota", code: "insufficient_quota" },
  403: { type: "permission_error", code: null },
  404: { type: "not_found_error", code: null },
  409: { type: "invalid_request_error", code: "idempotency_key_in_use" },
  413: { type: "invalid_request_error", code: "request_too_large" },
  415: { type: "invalid_request_error", code: "unsupported_media_type" },
  422: { type: "invalid_request_error", code: "idempotency_key_reused" },
  429: { type: "rate_limit_error", code: "rate_limit_exceeded" },
  500: { type: "api_error", code: "internal_error" },
  502: { type: "api_error", code: "upstream_error" },
  503: { type: "api_error", code: "model_not_available" },
  504: { type: "api_error", code: "upstream_timeout" },
};

/** How /v1 answers an error of `code` (or of a status that names no code of the list). */
export function openAiShapeOf(code: string, status: ErrorStatus): { status: ErrorStatus; type: string; code: string | null } {
  const own: OpenAiShape = (ERROR_CODES as Record<string, ErrorSpec>)[code]?.openai ?? {};
  const answered = own.status ?? status;
  const byStatus = OPENAI_BY_STATUS[answered] ?? { type: answered >= 500 ? "api_error" : "invalid_request_error", code: null };
  return { status: answered, type: own.type ?? byStatus.type, code: own.code === undefined ? byStatus.code : own.code };
}
