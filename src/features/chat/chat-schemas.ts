import { z } from "@hono/zod-openapi";

// What the chat surfaces' requests and replies share: POST /chat/send and regenerate, and
// /v1/chat/completions.

/** The longest message a person may send, in characters (an emoji counts once). */
export const MAX_MESSAGE_CHARS = 32_000;

/** The text of a message to a model. */
export const MessageText = z
  .string()
  // A message with nothing but whitespace asks the model nothing: refused, and the
  // document says so (the pattern).
  .regex(/\S/, "must not be empty or blank")
  // Characters, not UTF-16 units: an emoji counts once.
  .refine((m) => [...m].length <= MAX_MESSAGE_CHARS, `must be at most ${MAX_MESSAGE_CHARS} characters`)
  .openapi({ example: "How often should I water a monstera?", minLength: 1, maxLength: MAX_MESSAGE_CHARS });

/** The optional Idempotency-Key of a charged request. */
export const IdempotencyHeaders = z.object({
  "idempotency-key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "must be 1..255 visible ASCII characters")
    .optional()
    .openapi({ description: "A retry with the same key within 24 h returns the first reply, uncharged" }),
});

/** The credit headers of a charged reply. */
export const CreditReplyHeaders = z.object({
  "X-Credits-Remaining": z.string().openapi({ example: "499" }),
  "X-Credits-Reset": z.string().openapi({ example: "2026-11-23T00:00:00.000Z" }),
  "X-Model": z.string().optional().openapi({ example: "svc-70b", description: "The model that answered: the one asked for, or a fallback" }),
});
