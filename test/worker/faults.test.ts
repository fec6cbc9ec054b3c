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
    expect(await res.json()).toEqual({ error: 413, message: expect.stringMatching(/limit/) });
  });

  it("refuses U+0000 in a stored string with a 400 naming the field, and stores nothing", async () => {
    const auth = await signIn("nul");
    const headers = { ...auth, "Content-Type": "application/json" };
    const res = await call("/plants", { method: "POST", headers, body: '{"id":1,"name":"before\\u0000after"}' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 400, message: "name: must not contain the NUL character (U+0000)" });
    expect(await (await call("/plants", { headers: auth })).json()).toEqual([]);
  });
});
