import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { RATE_LIMIT_PER_MINUTE: "3" } });
  h.clock.set("2026-11-22T12:00:10.000Z");
});
afterAll(() => h.close());

describe("the per-user request limit", () => {
  it("answers 429 with Retry-After past the limit, per user, until the minute turns", async () => {
    const alice = await h.signIn("alice");
    for (let i = 0; i < 3; i++) expect((await h.request("/plants", { token: alice })).status).toBe(200);

    const refused = await h.request("/plants", { token: alice });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("50");
    expect(await refused.json()).toEqual({
      error: 429,
      message: "too many requests: at most 3 a minute per user; retry in 50 s",
      code: "rate_limited",
    });

    // Another user has their own budget.
    expect((await h.request("/plants", { token: await h.signIn("bob") })).status).toBe(200);

    h.clock.advance(50_000);
    expect((await h.request("/plants", { token: alice })).status).toBe(200);
  });

  it("answers in OpenAI's error shape on /v1", async () => {
    const carol = await h.signIn("carol");
    for (let i = 0; i < 3; i++) await h.request("/v1/models", { token: carol });
    const refused = await h.request("/v1/models", { token: carol });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
  });
});
