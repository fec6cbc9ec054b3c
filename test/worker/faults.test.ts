import { describe, expect, it } from "vitest";
import { call, signIn } from "./support";

describe("the Worker under faulty input", () => {
  it("answers 413 with the Error body for a body over the limit", async () => {
    const auth = await signIn("big-body");
    const res = await call("/plants", {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: `{"id":1,"name":"${"a".repeat(1_100_000)}"}`,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 413, message: expect.stringMatching(/limit/), code: "body_too_large" });
  });

  it("refuses U+0000 in a stored string with a 400 naming the field, and stores nothing", async () => {
    const auth = await signIn("nul");
    const headers = { ...auth, "Content-Type": "application/json" };
    const res = await call("/plants", { method: "POST", headers, body: '{"id":1,"name":"before\\u0000after"}' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 400, message: "name: must not contain the NUL character (U+0000)", code: "invalid_request" });
    expect(await (await call("/plants", { headers: auth })).json()).toEqual([]);
  });
});

describe("failed authentication on Workers", () => {
  it("is limited per CF-Connecting-IP by the rate-limiting binding, never the valid user", async () => {
    const from = (ip: string, headers: Record<string, string> = {}) => ({ headers: { "CF-Connecting-IP": ip, ...headers } });
    // The binding counts in real time: the run may cross into a new minute once, so the
    // first 429 comes after 30 failures and at most 60 (never sooner, never not at all).
    let failures = 0;
    let refused: Response | undefined;
    while (!refused && failures <= 61) {
      const res = await call("/plants", from("203.0.113.7", { "X-API-Key": `sk_random-${failures}` }));
      if (res.status === 429) refused = res;
      else {
        expect(res.status).toBe(401);
        await res.body?.cancel();
        failures++;
      }
    }
    expect(failures).toBeGreaterThanOrEqual(30);
    expect(failures).toBeLessThanOrEqual(60);
    expect(refused!.headers.get("Retry-After")).toBe("60");
    expect(await refused!.json()).toEqual({ error: 429, message: expect.stringMatching(/too many failed authentications/), code: "too_many_failed_authentications" });

    expect((await call("/plants", from("203.0.113.7", await signIn("valid-user")))).status).toBe(200);
    expect((await call("/plants", from("198.51.100.9", { "X-API-Key": "sk_random" }))).status).toBe(401);
  });
});
