import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import type { AppEnv } from "../deps";
import { ApiError } from "./errors";
import { excerpt } from "../errors";

const nouns: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  object: "a JSON object",
  array: "an array",
  bigint: "an integer",
};

const units: Record<string, string> = { string: " characters", array: " items" };

type RawIssue = Parameters<NonNullable<Parameters<typeof z.config>[0]>["customError"] & {}>[0];

/**
 * zod's wording for the checks a schema leaves unworded, in words a person can act on.
 * zod asks this only when the schema sets no message of its own, so those stay as written.
 */
function explain(issue: RawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      // The body parser hands integers past 2^53 over as bigint, which a number field refuses.
      if (typeof issue.input === "bigint") return issue.expected === "number" ? "must be a number in range" : "must be an integer";
      return `must be ${nouns[issue.expected] ?? issue.expected}`;
    case "too_small": {
      const unit = units[issue.origin] ?? "";
      if (issue.origin === "string" && Number(issue.minimum) === 1) return "must not be empty";
      return issue.inclusive ? `must be at least ${issue.minimum}${unit}` : `must be more than ${issue.minimum}${unit}`;
    }
    case "too_big": {
      const unit = units[issue.origin] ?? "";
      return issue.inclusive ? `must be at most ${issue.maximum}${unit}` : `must be less than ${issue.maximum}${unit}`;
    }
    case "invalid_value":
      return `must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "unrecognized_keys": {
      const keys = issue.keys.slice(0, 3).map((k) => JSON.stringify(excerpt(k)));
      return `unknown field${issue.keys.length > 1 ? "s" : ""}: ${keys.join(", ")}${issue.keys.length > 3 ? ", …" : ""}`;
    }
    case "invalid_format":
      return issue.format === "regex" ? "has the wrong format" : `must be a valid ${issue.format}`;
    default:
      return undefined;
  }
}

z.config({ customError: explain });

/** One sentence naming each bad field, e.g. `name: must be at most 256 characters`. */
export function describeZodError(error: ZodError, where: string): string {
  const problems = [
    ...new Set(
      error.issues.map((issue) => {
        const path = issue.path.map((p) => excerpt(String(p))).join(".");
        return path ? `${path}: ${issue.message}` : issue.message;
      }),
    ),
  ];
  const shown = problems.slice(0, 3);
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : "";
  return `invalid ${where}: ${shown.join("; ")}${more}`;
}

/**
 * The field the first problem is about, as a client would write it (`messages[2].content`),
 * or null for the whole input: OpenAI's `param`.
 */
export function fieldOf(error: ZodError): string | null {
  const path = error.issues[0]?.path ?? [];
  if (path.length === 0) return null;
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`)).join("");
}

const targets: Record<string, string> = {
  json: "request body",
  query: "query parameters",
  param: "path parameters",
  header: "headers",
};

/**
 * A router whose zod schemas are at once the validator and the OpenAPI document; every
 * validation failure becomes a 400 Error body that names the field.
 */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new ApiError("invalid_request", describeZodError(result.error, targets[result.target] ?? result.target));
      }
    },
  });
}
