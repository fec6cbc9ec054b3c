import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

let h: Harness;
let alice: string;
let bob: string;
beforeAll(async () => {
  h = await createHarness();
  alice = await h.signIn("alice");
  bob = await h.signIn("bob");
});
afterAll(() => h.close());

const post = (token: string, body: unknown) => h.request("/plants", { method: "POST", token, json: body });

describe("POST /plants", () => {
  it("creates a plant and replies with exactly name and tag", async () => {
    const res = await post(alice, { id: 1, name: "Monstera", tag: "tropical" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: "Monstera", tag: "tropical" });
  });

  it("omits tag when the plant has none", async () => {
    const res = await post(alice, { id: 2, name: "Fern" });
    expect(await res.json()).toEqual({ name: "Fern" });
  });

  it("answers 409 for a second plant with the same id for the same caller", async () => {
    await expectError(await post(alice, { id: 1, name: "Again" }), 409, /already exists/);
  });

  it("lets another user use the same id", async () => {
    expect((await post(bob, { id: 1, name: "Bob's" })).status).toBe(200);
  });

  it.each([
    ["2^53 + 1", "9007199254740993"],
    ["2^63 - 1", "9223372036854775807"],
    ["-2^63", "-9223372036854775808"],
  ])("keeps the int64 id %s exact", async (_label, id) => {
    const owner = await h.signIn(`int64-${id}`);
    const res = await h.request("/plants", { method: "POST", token: owner, json: `{"id":${id},"name":"big"}` });
    expect(res.status).toBe(200);
    // Exact: the neighbouring id is a different plant, and the id itself deletes.
    const neighbour = (BigInt(id) + (id.startsWith("-") ? 1n : -1n)).toString();
    expect((await h.request(`/plants/${neighbour}`, { method: "DELETE", token: owner })).status).toBe(404);
    expect((await h.request(`/plants/${id}`, { method: "DELETE", token: owner })).status).toBe(204);
  });

  it.each([
    ["2^63", "9223372036854775808"],
    ["-2^63 - 1", "-9223372036854775809"],
    ["a fraction", "1.5"],
    ["a string", '"7"'],
    ["an exponent past int64", "1e30"],
    ["null", "null"],
  ])("answers 400 for id %s", async (_label, id) => {
    const res = await h.request("/plants", { method: "POST", token: alice, json: `{"id":${id},"name":"x"}` });
    await expectError(res, 400, /id: must be an integer in the signed 64-bit range/);
  });

  it.each([
    [{ id: 3 }, /name/],
    [{ id: 3, name: "" }, /name: must be 1\.\.256/],
    [{ id: 3, name: "x".repeat(257) }, /name: must be 1\.\.256/],
    [{ id: 3, name: 5 }, /name/],
    [{ id: 3, name: "ok", tag: "x".repeat(257) }, /tag/],
    [{ name: "no id" }, /id/],
    [[1, 2], /request body/],
  ])("answers 400 naming the field for %j", async (body, pattern) => {
    await expectError(await post(alice, body), 400, pattern);
  });

  it("accepts names and tags at their maximum length", async () => {
    const res = await post(alice, { id: 4, name: "n".repeat(256), tag: "t".repeat(256) });
    expect(res.status).toBe(200);
  });

  it("answers 400 for malformed JSON", async () => {
    await expectError(await h.request("/plants", { method: "POST", token: alice, json: '{"id": 1,' }), 400, /not valid JSON/);
  });

  it("answers 400 when the body is missing", async () => {
    await expectError(await h.request("/plants", { method: "POST", token: alice }), 400);
  });

  it("answers 415 for a body that is not JSON", async () => {
    const res = await h.request("/plants", {
      method: "POST",
      token: alice,
      headers: { "Content-Type": "text/plain" },
      body: "id=1",
    });
    await expectError(res, 415, /Content-Type: application\/json/);
  });

  it("answers 413 for a body over the limit", async () => {
    const res = await post(alice, { id: 5, name: "x", pad: "p".repeat(1_100_000) });
    await expectError(res, 413, /limit/);
  });
});

describe("GET /plants", () => {
  it("lists only the caller's plants, ordered by id, with default limit 100", async () => {
    const carol = await h.signIn("carol");
    for (const id of [30, -5, 10, 9007199254740993n]) {
      await h.request("/plants", { method: "POST", token: carol, json: `{"id":${id},"name":"p${id}"}` });
    }
    const res = await h.request("/plants", { token: carol });
    expect(res.status).toBe(200);
    expect(res.headers.get("link")).toBeNull();
    expect(await res.json()).toEqual([{ name: "p-5" }, { name: "p10" }, { name: "p30" }, { name: "p9007199254740993" }]);
  });

  it("pages with a Link rel=next cursor until the end", async () => {
    const dave = await h.signIn("dave");
    for (let id = 1; id <= 7; id++) await post(dave, { id, name: `p${id}` });
    const names: string[] = [];
    let next: string | null = "/plants?limit=3";
    let pages = 0;
    while (next) {
      const res = await h.request(next, { token: dave });
      expect(res.status).toBe(200);
      names.push(...((await res.json()) as Array<{ name: string }>).map((p) => p.name));
      const link = res.headers.get("link");
      next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
      pages++;
    }
    expect(pages).toBe(3);
    expect(names).toEqual(["p1", "p2", "p3", "p4", "p5", "p6", "p7"]);
  });

  it("ends on a full page without a Link, and lists nothing as []", async () => {
    const erin = await h.signIn("erin");
    const empty = await h.request("/plants", { token: erin });
    expect(await empty.text()).toBe("[]");
    for (let id = 1; id <= 6; id++) await post(erin, { id, name: `p${id}` });
    const first = await h.request("/plants?limit=3", { token: erin });
    expect(first.headers.get("link")).toBe('</plants?limit=3&cursor=3>; rel="next"');
    const second = await h.request("/plants?limit=3&cursor=3", { token: erin });
    expect(second.headers.get("link")).toBeNull();
    expect(await second.json()).toEqual([{ name: "p4" }, { name: "p5" }, { name: "p6" }]);
  });

  it("writes names and tags exactly as JSON.stringify would, byte for byte", async () => {
    // The page's JSON is made by the database (services/plants.ts), not by JSON.stringify.
    const frank = await h.signIn("frank");
    const awkward = [
      { name: 'quote " and backslash \\', tag: "" },
      { name: "controls \b\f\n\r\t \u0001 \u001f \u007f" },
      { name: "line and paragraph separators \u2028 \u2029", tag: "</script><script>" },
      { name: "accents é ü ñ, CJK 植物, emoji 🌱🪴", tag: "ǅ" },
    ];
    for (const [i, plant] of awkward.entries()) expect((await post(frank, { id: i + 1, ...plant })).status).toBe(200);
    const res = await h.request("/plants", { token: frank });
    expect(await res.text()).toBe(JSON.stringify(awkward));
  });

  it.each(["0", "1001", "abc", "1.5", "-1", "0x10", "1e2", "%2B5", "%205", ""])("answers 400 for limit=%s", async (limit) => {
    await expectError(await h.request(`/plants?limit=${limit}`, { token: alice }), 400, /limit/);
  });

  it("answers 400 for a cursor that is not an int64", async () => {
    await expectError(await h.request("/plants?cursor=zzz", { token: alice }), 400, /cursor/);
  });

  it("accepts limit 1 and 1000", async () => {
    expect((await h.request("/plants?limit=1", { token: alice })).status).toBe(200);
    expect((await h.request("/plants?limit=1000", { token: alice })).status).toBe(200);
  });
});

describe("DELETE /plants/{id}", () => {
  it("deletes the caller's plant: 204 with no body, then 404", async () => {
    await post(alice, { id: 77, name: "Gone soon" });
    const res = await h.request("/plants/77", { method: "DELETE", token: alice });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    await expectError(await h.request("/plants/77", { method: "DELETE", token: alice }), 404, /plant 77 not found/);
  });

  it("answers 404 for another user's plant and leaves it in place", async () => {
    await post(bob, { id: 88, name: "Bob's only" });
    await expectError(await h.request("/plants/88", { method: "DELETE", token: alice }), 404);
    const bobs = (await (await h.request("/plants", { token: bob })).json()) as Array<{ name: string }>;
    expect(bobs.map((p) => p.name)).toContain("Bob's only");
  });

  it.each(["abc", "1.5", "9223372036854775808", "%20"])("answers 400 for id %s", async (id) => {
    await expectError(await h.request(`/plants/${id}`, { method: "DELETE", token: alice }), 400, /id/);
  });
});

describe("database round trips", () => {
  it("makes exactly one per plant request authenticated by JWT, first sight included", async () => {
    const erin = await h.signIn("erin-round-trips");
    const count = async (run: () => Promise<Response>) => {
      const before = h.roundTrips();
      const res = await run();
      expect(res.status).toBeLessThan(300);
      return h.roundTrips() - before;
    };
    expect(await count(() => post(erin, { id: 1, name: "first sight" }))).toBe(1);
    expect(await count(() => h.request("/plants?limit=20", { token: erin }))).toBe(1);
    expect(await count(() => h.request("/plants/1", { method: "DELETE", token: erin }))).toBe(1);
  });
});

describe("errors everywhere", () => {
  it("answers an unknown path with a 404 Error body", async () => {
    await expectError(await h.request("/no/such/thing"), 404);
  });

  it("answers a known path with the wrong method with 405 and Allow (HEAD goes with GET)", async () => {
    const res = await h.request("/plants", { method: "PUT", token: alice });
    expect(res.headers.get("allow")).toBe("POST, GET, HEAD");
    await expectError(res, 405, /PUT is not supported on \/plants; use POST, GET, HEAD/);
    expect((await h.request("/plants/12", { method: "GET", token: alice })).headers.get("allow")).toBe("DELETE");
  });

  it("labels JSON replies application/json; charset=utf-8, and a 204 with no type", async () => {
    expect((await h.request("/health")).headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect((await h.request("/nope")).headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect((await h.request("/plants")).headers.get("content-type")).toBe("application/json; charset=utf-8");
    await post(alice, { id: 950, name: "x" });
    const deleted = await h.request("/plants/950", { method: "DELETE", token: alice });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get("content-type")).toBeNull();
  });

  it("answers a browser's CORS preflight", async () => {
    const res = await h.request("/plants", {
      method: "OPTIONS",
      headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
    const get = await h.request("/plants", { token: alice, headers: { Origin: "https://app.example" } });
    expect(get.headers.get("access-control-expose-headers")).toMatch(/X-Request-Id/);
  });

  it("carries X-Request-Id and the CORS headers on every reply, whoever built it", async () => {
    await post(alice, { id: 951, name: "x" });
    const replies = {
      json: await h.request("/health"),
      "not found": await h.request("/nope"),
      "method not allowed": await h.request("/plants", { method: "PUT", token: alice }),
      "no content": await h.request("/plants/951", { method: "DELETE", token: alice }),
      html: await h.request("/docs"),
      "a page with a Link": await h.request("/plants?limit=1", { token: alice }),
      preflight: await h.request("/plants", { method: "OPTIONS", headers: { Origin: "https://app.example", "Access-Control-Request-Method": "GET" } }),
    };
    for (const [kind, res] of Object.entries(replies)) {
      expect(res.headers.get("x-request-id"), kind).toMatch(/^[\w-]{20,}$/);
      expect(res.headers.get("access-control-allow-origin"), kind).toBe("*");
      expect(res.headers.get("vary"), kind).toMatch(/Origin/);
    }
    expect(replies["method not allowed"].headers.get("allow")).toBe("POST, GET, HEAD");
    expect(replies["a page with a Link"].headers.get("link")).toMatch(/rel="next"/);
    expect(replies.html.headers.get("content-type")).toBe("text/html; charset=UTF-8");
    // A client's own id is kept, so a request can be followed across services.
    expect((await h.request("/health", { headers: { "X-Request-Id": "trace-42" } })).headers.get("x-request-id")).toBe("trace-42");
  });

  it("serves health and the OpenAPI 3.1 document with the plant paths", async () => {
    expect(await (await h.request("/health")).json()).toEqual({ status: "ok" });
    const doc = (await (await h.request("/openapi.json")).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/plants", "/plants/{id}", "/health"]));
    const responses = (doc.paths["/plants"] as { get: { responses: Record<string, { headers?: Record<string, unknown> }> } }).get.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(["200", "400", "401", "429", "500"]));
    expect(responses["401"]!.headers).toHaveProperty("WWW-Authenticate");
    expect(responses["429"]!.headers).toHaveProperty("Retry-After");
    expect((await h.request("/docs")).status).toBe(200);
  });
});

describe("exact reading of bodies", () => {
  it.each([
    ["a fraction a double rounds to an integer", "100.000000000000000001"],
    ["an exponent form with a fraction", "7.00000000000000001e0"],
  ])("refuses %s as an id", async (_label, id) => {
    const owner = await h.signIn("inexact");
    const res = await h.request("/plants", { method: "POST", token: owner, json: `{"id":${id},"name":"x"}` });
    await expectError(res, 400, /id: must be an integer/);
  });

  it.each([
    ["1.0", "1"],
    ["1e3", "1000"],
    ["9007199254740995.0", "9007199254740995"],
  ])("reads %s as the integer it is exactly", async (literal, id) => {
    const owner = await h.signIn(`exact-${literal}`);
    const res = await h.request("/plants", { method: "POST", token: owner, json: `{"id":${literal},"name":"x"}` });
    expect(res.status).toBe(200);
    expect((await h.request(`/plants/${id}`, { method: "DELETE", token: owner })).status).toBe(204);
  });

  it("refuses a lone surrogate escape rather than storing something else", async () => {
    await expectError(await post(alice, { id: 900, name: "\ud800" }), 400, /surrogate/);
  });

  it("refuses a body that is not valid UTF-8", async () => {
    const body = new Uint8Array([...new TextEncoder().encode('{"id":901,"name":"'), 0xff, 0xfe, ...new TextEncoder().encode('"}')]);
    const res = await h.request("/plants", { method: "POST", token: alice, headers: { "Content-Type": "application/json" }, body });
    await expectError(res, 400, /UTF-8/);
  });

  it("answers a deeply nested body with a 400 that says so", async () => {
    const deep = "[".repeat(20_000) + "]".repeat(20_000);
    await expectError(await h.request("/plants", { method: "POST", token: alice, json: deep }), 400, /nested too deeply/);
  });

  it("reads an empty JSON body as an empty object", async () => {
    const res = await h.request("/plants", { method: "POST", token: alice, headers: { "Content-Type": "application/json" }, body: "" });
    await expectError(res, 400, /id/);
  });
});
