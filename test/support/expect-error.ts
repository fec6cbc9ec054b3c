import { expect } from "vitest";

/**
 * Asserts that `res` is the Error body `{ error, message }` with this status (and, when
 * given, a message matching `pattern`); returns the body for further checks.
 */
export async function expectError(res: Response, status: number, pattern?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/application\/json/);
  const body = (await res.json()) as { error: number; message: string };
  expect(body).toEqual({ error: status, message: expect.any(String) });
  if (pattern) expect(body.message).toMatch(pattern);
  return body;
}
