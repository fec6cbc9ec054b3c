import type { ApiKeyLimits } from "./api-keys";
import type { Identity } from "./jwt";
import type { SignInMethod } from "./session-tokens";

/** Who is calling, and with what. */
export type Principal =
  /** An identity provider's (or local login's) token, sent as a bearer token. */
  | { via: "jwt"; userId: string; identity: Identity }
  /** An access token of one of the service's own sessions (POST /auth/session). */
  | { via: "session"; userId: string; sessionId: string; method: SignInMethod }
  /** An API key, with what its owner limited it to. */
  | { via: "api-key"; userId: string; keyId: string; limits?: ApiKeyLimits };
