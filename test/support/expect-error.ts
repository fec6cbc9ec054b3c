import { expect } from "vitest";

/**
 * Asserts that `res` is the Error body `{ error, message, code }` with this status (and,
 * when given, a message matching `pattern` and that `code`); returns the body for further
 * checks.
 */
export async function expectError(res: Response, status: number, pattern?: RegExp, code?: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/application\/json/);
  const body = (await res.json()) as { error: number; message: string; code: string };
  expect(body).toEqual({ error: status, message: expect.any(String), code: expect.stringMatching(/^[a-z][a-z0-9_]*$/) });
  if (pattern) expect(body.message).toMatch(pattern);
  if (code) expect(body.code).toBe(code);
  return body;
}
