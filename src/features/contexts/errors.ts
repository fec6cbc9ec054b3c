import { DomainError, excerpt } from "../../platform/errors";

/** The context a request names is not one of the caller's (or no longer exists). */
export class ContextNotFound extends DomainError {
  constructor(contextId: string, message = `context ${excerpt(contextId)} not found`) {
    super("context_not_found", message, { field: "contextId" });
  }
}

/** The message a request names is not one of this context's. */
export class MessageNotFound extends DomainError {
  constructor(messageId: string, contextId: string, field: string) {
    super("message_not_found", `${field}: message ${excerpt(messageId)} is not a message of context ${excerpt(contextId)}`, { field });
  }
}
