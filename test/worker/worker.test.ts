import { describe, expect, it } from "vitest";
import { call, signIn } from "./support";

describe("the Worker in workerd over D1", () => {
  it("answers health from the database", async () => {
    const res = await call("/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("keeps a plant round trip exact past 2^53", async () => {
    const auth = await signIn("alice");
    const created = await call("/plants", {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: '{"id":9007199254740993,"name":"Monstera","tag":"tropical"}',
    });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ name: "Monstera", tag: "tropical" });

    const duplicate = await call("/plants", {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: '{"id":9007199254740993,"name":"Again"}',
    });
    expect(duplicate.status).toBe(409);

    const listed = await call("/plants?limit=10", { headers: auth });
    expect(await listed.json()).toEqual([{ name: "Monstera", tag: "tropical" }]);

    // 2^53 + 1 and 2^53 are different plants: D1 must not round the id.
    expect((await call("/plants/9007199254740992", { method: "DELETE", headers: auth })).status).toBe(404);
    expect((await call("/plants/9007199254740993", { method: "DELETE", headers: auth })).status).toBe(204);
    expect(await (await call("/plants", { headers: auth })).json()).toEqual([]);
  });

  it("pages plants with a Link cursor", async () => {
    const auth = await signIn("pager");
    for (const id of ["9223372036854775807", "-9223372036854775808", "1"]) {
      await call("/plants", { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: `{"id":${id},"name":"p${id}"}` });
    }
    const first = await call("/plants?limit=2", { headers: auth });
    expect(await first.json()).toEqual([{ name: "p-9223372036854775808" }, { name: "p1" }]);
    const next = /^<([^>]+)>/.exec(first.headers.get("Link") ?? "")?.[1];
    expect(next).toBe("/plants?limit=2&cursor=1");
    expect(await (await call(next!, { headers: auth })).json()).toEqual([{ name: "p9223372036854775807" }]);
  });

  it("refuses a request without credentials with a 401 Error body", async () => {
    const res = await call("/plants");
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    expect(await res.json()).toMatchObject({ error: 401 });
  });
});
