import { OpenAPIHono } from "@hono/zod-openapi";
import type { ZodError } from "zod";
import type { AppEnv } from "./deps";
import { ApiError } from "./errors";

/** One sentence naming each bad field, e.g. `name: must be 1..256 characters`. */
export function describeZodError(error: ZodError, where: string): string {
  const problems = error.issues.slice(0, 3).map((issue) => {
    const path = issue.path.map(String).join(".");
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  const more = error.issues.length > 3 ? ` (and ${error.issues.length - 3} more)` : "";
  return `invalid ${where}: ${problems.join("; ")}${more}`;
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
