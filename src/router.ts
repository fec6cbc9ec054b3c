import { OpenAPIHono } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import type { AppEnv } from "./deps";
import { ApiError } from "./errors";

type Issue = ZodError["issues"][number];

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

/**
 * zod's own wording ("Invalid input: expected number, received bigint") in words a person
 * can act on; messages a schema sets itself are kept as they are.
 */
function explain(issue: Issue): string {
  const own = !/^(Invalid input|Invalid option|Too small|Too big|Unrecognized key|Invalid string|Invalid URL|Invalid)/.test(issue.message);
  if (own) return issue.message;
  switch (issue.code) {
    case "invalid_type":
      if (/received undefined$/.test(issue.message)) return "is required";
      if (issue.expected === "int" || /received bigint$/.test(issue.message)) return issue.expected === "number" ? "must be a number in range" : "must be an integer";
      return `must be ${nouns[issue.expected] ?? issue.expected}`;
    case "too_small": {
      const unit = units[issue.origin] ?? "";
      if (issue.origin === "string" && Number(issue.minimum) === 1) return "must not be empty";
      return `must be at least ${issue.inclusive ? "" : "more than "}${issue.minimum}${unit}`.replace("at least more than", "more than");
    }
    case "too_big": {
      const unit = units[issue.origin] ?? "";
      return issue.inclusive ? `must be at most ${issue.maximum}${unit}` : `must be less than ${issue.maximum}${unit}`;
    }
    case "invalid_value":
      return `must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "unrecognized_keys":
      return `unknown field${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}`;
    case "invalid_format":
      return issue.format === "regex" ? "has the wrong format" : `must be a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

/** One sentence naming each bad field, e.g. `name: must be at most 256 characters`. */
export function describeZodError(error: ZodError, where: string): string {
  const problems = [
    ...new Set(
      error.issues.map((issue) => {
        const path = issue.path.map(String).join(".");
        return path ? `${path}: ${explain(issue)}` : explain(issue);
      }),
    ),
  ];
  const shown = problems.slice(0, 3);
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : "";
  return `invalid ${where}: ${shown.join("; ")}${more}`;
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
        throw new ApiError(400, describeZodError(result.error, targets[result.target] ?? result.target));
      }
    },
  });
}
