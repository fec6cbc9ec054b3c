import { z } from "@hono/zod-openapi";

/**
 * An integer query parameter from `min` to `max`, `fallback` when absent. Plain decimal
 * digits only: `0x10`, `1e2`, `+5` and ` 5` are refused rather than guessed at.
 */
export function intQuery(min: number, max: number, fallback: number, description?: string) {
  const message = `must be an integer from ${min} to ${max}`;
  return z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined) return fallback;
      const value = /^\d{1,10}$/.test(text) ? Number(text) : NaN;
      if (!(value >= min && value <= max)) {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      return value;
    })
    .openapi({ type: "integer", minimum: min, maximum: max, default: fallback, ...(description ? { description } : {}) });
}

/** A boolean query parameter: `true` or `false`, `fallback` when absent. */
export function boolQuery(fallback: boolean | undefined, description?: string) {
  return z
    .enum(["true", "false"], { error: "must be true or false" })
    .optional()
    .transform((text) => (text === undefined ? fallback : text === "true"))
    .openapi({ type: "boolean", ...(fallback === undefined ? {} : { default: fallback }), ...(description ? { description } : {}) });
}
