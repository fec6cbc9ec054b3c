import type { Config } from "../../platform/config";
import { DomainError } from "../../platform/errors";
import type { Logger } from "../../platform/log";

// Cloudflare Turnstile's server-side check (its "siteverify" API): the token the widget gave
// the person's browser is posted with the widget's secret (and the person's address), once;
// Cloudflare answers `{ success, "error-codes": [...], challenge_ts, hostname, ... }`. A token
// is good for 300 s and one check, so a failed sign-up needs a new one.

/** How long siteverify may take before the sign-up is told to retry. */
const TIMEOUT_MS = 5_000;
/** Turnstile tokens are at most 2048 characters. */
const MAX_TOKEN_CHARS = 2048;

/** What siteverify answers; only the fields used here. */
interface SiteverifyReply {
  success?: unknown;
  "error-codes"?: unknown;
}

export interface TurnstileDeps {
  config: Pick<Config, "TURNSTILE_SECRET_KEY" | "TURNSTILE_VERIFY_URL">;
  log: Logger;
}

const unavailable = (message: string) => new DomainError("turnstile_unavailable", message, { retryAfterSeconds: 10 });

/** Refuses unless Cloudflare confirms the token; throws 503 when it cannot say. */
export async function verifyTurnstile(deps: TurnstileDeps, token: string | undefined, remoteIp: string | undefined): Promise<void> {
  if (!token) {
    throw new DomainError("turnstile_required", "creating an account here needs the check that you are a person: complete it on the sign-in page, then sign in again", {
      field: "turnstileToken",
    });
  }
  if (token.length > MAX_TOKEN_CHARS) throw failed();
  const body = new URLSearchParams({ secret: deps.config.TURNSTILE_SECRET_KEY!, response: token });
  if (remoteIp) body.set("remoteip", remoteIp);
  let reply: SiteverifyReply;
  try {
    const res = await fetch(deps.config.TURNSTILE_VERIFY_URL, { method: "POST", body, signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    reply = (await res.json()) as SiteverifyReply;
  } catch (err) {
    deps.log.warn("Turnstile's siteverify could not be asked", { url: deps.config.TURNSTILE_VERIFY_URL, err });
    throw unavailable("the check that you are a person could not be confirmed with Cloudflare just now: try again in a few seconds");
  }
  if (reply.success === true) return;
  const codes = Array.isArray(reply["error-codes"]) ? reply["error-codes"].map(String) : [];
  if (codes.some((c) => c === "missing-input-secret" || c === "invalid-input-secret")) {
    deps.log.error("Turnstile refused this server's secret: check TURNSTILE_SECRET_KEY", { codes });
    throw unavailable("the check that you are a person is misconfigured on this server: its operator must fix TURNSTILE_SECRET_KEY");
  }
  if (codes.includes("internal-error")) throw unavailable("Cloudflare could not check that you are a person just now: try again in a few seconds");
  throw failed();
}

function failed() {
  return new DomainError(
    "turnstile_failed",
    "the check that you are a person did not pass, or it expired (it lasts 5 minutes and serves once): complete it again, then sign in",
    { field: "turnstileToken" },
  );
}
