import { z } from "@hono/zod-openapi";

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

const int64Message = "must be an integer in the signed 64-bit range (-9223372036854775808..9223372036854775807)";

/** Parses decimal text into an int64, or null when it is not one. */
export function parseInt64(text: string): bigint | null {
  if (!/^-?\d{1,19}$/.test(text)) return null;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : null;
}

/**
 * An int64 in a JSON body. The body parser hands over integers past 2^53 as bigint, so
 * the value is exact; strings and fractions are refused.
 */
export const Int64Json = z
  .custom<number | bigint>((v) => (typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint", {
    message: int64Message,
  })
  .transform((v) => BigInt(v))
  .refine((v) => v >= INT64_MIN && v <= INT64_MAX, { message: int64Message })
  // The example is one a JavaScript number holds exactly; ids past 2^53 (9007199254740993) stay exact too.
  .openapi({ type: "integer", format: "int64", example: 9007199254740991 });

/** An int64 in a path or query parameter. */
export const Int64Text = z
  .string()
  .refine((v) => parseInt64(v) !== null, { message: int64Message })
  .transform((v) => parseInt64(v)!)
  .openapi({ type: "integer", format: "int64" });
