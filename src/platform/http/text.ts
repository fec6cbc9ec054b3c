import { z } from "@hono/zod-openapi";

/**
 * The control characters (Unicode category Cc: U+0000..U+001F and U+007F..U+009F), for a
 * character class in a pattern of the document. `\p{Cc}` says the same in JavaScript, but
 * clients generated from the document compile its patterns with their own regex engine, and
 * Python's `re`, like others, has no Unicode property classes.
 */
export const CONTROL_CHARS = "\\x00-\\x1f\\x7f-\\x9f";

/**
 * A text field of `min..max` characters, counted as code points (as JSON Schema's
 * minLength/maxLength count them, so an emoji is one character here and there).
 * `trim`: spaces around the text are dropped first, and the document says the text must
 * hold something other than spaces.
 */
export function text(min: number, max: number, options: { trim?: boolean; message?: string } = {}) {
  const { trim = false } = options;
  const message = options.message ?? (min > 0 ? `must be ${min}..${max} characters` : `must be at most ${max} characters`);
  const base = trim ? z.string().trim() : z.string();
  return base
    .refine((v) => {
      const length = Array.from(v).length;
      return length >= min && length <= max;
    }, message)
    .openapi({ minLength: min, maxLength: max, ...(trim && min > 0 ? { pattern: "\\S" } : {}) });
}
