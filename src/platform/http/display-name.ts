import { z } from "@hono/zod-openapi";
import { CONTROL_CHARS } from "./text";

const MESSAGE = "must be 1..100 characters, without control characters";

/**
 * A name people give things they see in lists (their profile, their API keys): trimmed,
 * 1..100 characters counted as code points (100 emoji fit as 100 letters do), no control
 * characters.
 */
export const DisplayName = z
  .string({ error: MESSAGE })
  .trim()
  .refine((v) => {
    const length = Array.from(v).length;
    return length >= 1 && length <= 100 && !/\p{Cc}/u.test(v);
  }, MESSAGE)
  .openapi({ minLength: 1, maxLength: 100, pattern: `^[^${CONTROL_CHARS}]*[^${CONTROL_CHARS}\\s][^${CONTROL_CHARS}]*$` });
