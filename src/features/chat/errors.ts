import type { ErrorCode } from "../../platform/error-codes";
import { DomainError, excerpt } from "../../platform/errors";
import type { Credits } from "../account/credits";

// The chat exchange's refusals and failures, in the domain's words (see src/platform/errors.ts).
// Every one of them means: nothing was charged.

/** The request names a model this server does not have. */
export class ModelNotFound extends DomainError {
  constructor(message: string) {
    super("model_not_found", message, { field: "model" });
  }
}

/** The request asks a model for what it does not take: tools, images, a JSON reply. */
export class ModelLacksCapability extends DomainError {
  constructor(modelId: string, what: "tools" | "images" | "json", field: string) {
    const wording: Record<typeof what, [ErrorCode, string]> = {
      tools: ["model_without_tools", `model ${modelId} does not take tools; send the request without tools and tool messages, or choose a model with tools: true in GET /models`],
      images: ["model_without_images", `model ${modelId} does not take images; send text only, or choose a model with images: true in GET /models`],
      json: ["model_without_json", `model ${modelId} cannot be asked for a JSON reply here; leave response_format unset, or choose another model`],
    };
    const [code, message] = wording[what];
    super(code, message, { field });
  }
}

/** The model exists but cannot be used now: its provider is not configured, or refused this server. */
export class ModelUnavailable extends DomainError {
  constructor(message: string, code: "model_not_configured" | "model_unreachable" = "model_not_configured") {
    super(code, message, { field: "model" });
  }
}

/** The model's provider failed before the reply was complete. */
export class ModelFailed extends DomainError {
  constructor(modelId: string) {
    super("model_failed", `model ${modelId} failed to answer; nothing was charged, try again`);
  }
}

/** The model's provider did not answer (or stopped answering) within the timeout. */
export class ModelTimedOut extends DomainError {
  constructor(modelId: string, limit: string) {
    super("model_timeout", `model ${modelId} did not answer within ${limit}; nothing was charged, try again`);
  }
}

/** The caller went away or stopped the reply before it was complete. */
export class ExchangeCancelled extends DomainError {
  constructor() {
    super("cancelled", "the request was cancelled by the client before the reply was complete; nothing was charged");
  }
}

/** The day's credits do not cover the message; they return at the next 00:00 UTC. */
export class ReplyLost extends DomainError {
  constructor(replyId: string) {
    super("reply_lost", `reply ${excerpt(replyId)} stopped being written: the server writing it went away; its credit is refunded, regenerate it`);
  }
}

export class CreditsUsedUp extends DomainError {
  constructor(
    message: string,
    readonly credits: Credits,
    retryAfterSeconds: number,
  ) {
    super("credits_used_up", message, { retryAfterSeconds, credits });
  }
}

/** The model costs more than a whole day's allowance: no waiting helps. */
export class PriceOverAllowance extends DomainError {
  constructor(modelId: string, price: number, allowance: number) {
    super(
      "model_over_allowance",
      `insufficient credits: model ${modelId} costs ${price} credits per message, more than the daily allowance of ${allowance}; choose another model`,
      { field: "model" },
    );
  }
}

/** The first request with this Idempotency-Key is still running; its reply comes soon. */
export class IdempotencyKeyInUse extends DomainError {
  constructor() {
    super(
      "idempotency_key_in_use",
      "a request with this Idempotency-Key is still being answered; retry in a few seconds to get its reply",
      { retryAfterSeconds: 2 },
    );
  }
}

/** The Idempotency-Key was already used for a different request. */
export class IdempotencyKeyReused extends DomainError {
  constructor() {
    super("idempotency_key_reused", "this Idempotency-Key was already used for a different request; send a new key for a new message");
  }
}

/** A message would follow a user message (`parentId`): it can only follow a reply. */
export class ParentNotAReply extends DomainError {
  constructor(messageId: string) {
    super(
      "parent_not_a_reply",
      `parentId: message ${excerpt(messageId)} is a user message; a message follows a reply (to send an edited message again, give the parentId of the message it replaces)`,
      { field: "parentId" },
    );
  }
}

/** The message to regenerate is not a reply to a user message, so there is nothing to answer again. */
export class NotAnswerable extends DomainError {
  constructor(messageId: string, why: string) {
    super("not_a_reply", `message ${excerpt(messageId)} cannot be regenerated: ${why}; regenerate a reply`, { field: "messageId" });
  }
}
