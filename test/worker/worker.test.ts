import { describe, expect, it } from "vitest";
import { call, signIn } from "./support";

describe("the Worker in workerd over D1", () => {
  it("answers health from the database", async () => {
    const res = await call("/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("collects no metrics: GET /metrics is 404, pointing at the Workers way (the Node server serves them)", async () => {
    const res = await call("/metrics", { headers: { Accept: "application/json" } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 404, message: expect.stringMatching(/the Worker keeps none; see docs\/operating.md/), code: "not_found" });
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

  it("serves its OpenAPI document, with the types, bounds and formats of its schemas", async () => {
    // The Worker runs zod with the bundle's locale stand-in (src/platform/worker/).
    // test/worker-bundle.test.ts compares the deployed bundle's whole document
    // with the Node server's.
    const res = await call("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/plants", "/plants/{id}", "/v1/chat/completions", "/audio/transcriptions"]));
    expect(doc.components.schemas.NewPlant).toEqual({
      type: "object",
      properties: {
        id: { type: "integer", format: "int64", example: 9007199254740991 },
        name: { type: "string", minLength: 1, maxLength: 256, example: "Monstera" },
        tag: { type: "string", minLength: 0, maxLength: 256, example: "tropical" },
      },
      required: ["id", "name"],
    });
    // Integer, bounds, pattern and date-time: read from zod's checks (aggregateChecks).
    expect(doc.components.schemas.ShareOptions).toEqual({
      type: "object",
      properties: {
        expiresIn: { type: "integer", minimum: 60, maximum: 31536000, description: "Seconds until the link stops working; without it, it never does" },
      },
    });
    expect(doc.components.schemas.Context).toMatchObject({
      properties: {
        id: { type: "string", pattern: "^ctx_[A-Za-z0-9_-]{22}$" },
        messageCount: { type: "integer" },
        createdAt: { type: "string", format: "date-time" },
      },
    });
  });

  it("names each bad field of a request body in words", async () => {
    const auth = await signIn("careless");
    const res = await call("/plants", {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ id: 3, name: 5, tag: "x".repeat(257) }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 400, message: "invalid request body: name: must be a string; tag: must be at most 256 characters", code: "invalid_request" });
  });

  it("refuses a request without credentials with a 401 Error body", async () => {
    const res = await call("/plants");
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    expect(await res.json()).toMatchObject({ error: 401 });
  });
});

describe("moving contexts on the Worker (D1)", () => {
  it("exports a user's contexts and imports them again, groups and branches kept, in one batch", async () => {
    const auth = await signIn("mover");
    const json = { ...auth, "Content-Type": "application/json" };
    const group = (await (await call("/groups", { method: "POST", headers: json, body: JSON.stringify({ name: "Balcony" }) })).json()) as { id: string };
    const created = await call("/contexts", { method: "POST", headers: json, body: JSON.stringify({ name: "Repotting", groupId: group.id }) });
    expect(created.status).toBe(201);
    const exported = await call("/me/export", { headers: auth });
    expect(exported.status).toBe(200);
    const file = await exported.text();
    // Into the same account: it is already here.
    const again = await call("/contexts/import", { method: "POST", headers: json, body: file });
    expect(again.status).toBe(201);
    expect(await again.json()).toEqual({ items: [], skipped: 1 });
    // Into another: made there, in a group of the same name.
    const other = await signIn("mover-elsewhere");
    const imported = await call("/contexts/import", { method: "POST", headers: { ...other, "Content-Type": "application/json" }, body: file });
    expect(imported.status).toBe(201);
    expect(((await imported.json()) as { skipped: number }).skipped).toBe(0);
    const listed = (await (await call("/contexts?limit=10", { headers: other })).json()) as { items: Array<{ name: string; groupId: string | null }> };
    expect(listed.items.map((c) => c.name)).toEqual(["Repotting"]);
    const groups = (await (await call("/groups", { headers: other })).json()) as { items: Array<{ id: string; name: string }> };
    expect(groups.items.map((g) => g.name)).toEqual(["Balcony"]);
    expect(listed.items[0]!.groupId).toBe(groups.items[0]!.id);
  });
});
