import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";

let h: Harness;
let base: string;
let alice: string;
beforeAll(async () => {
  h = await createHarness();
  base = await h.listen();
  alice = await h.signIn("alice");
});
afterAll(() => h.close());

/** A request over a real socket with any method (fetch refuses TRACE). */
function raw(path: string, method: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; allow?: string; body: any }>((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("methods a path does not serve", () => {
  it("answers PATCH /contexts/search with 405 and Allow: GET, HEAD instead of taking 'search' for a context id", async () => {
    const res = await h.request("/contexts/search", { method: "PATCH", token: alice, json: { name: "x" } });
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    await expectError(res, 405, /PATCH is not supported on \/contexts\/search; use GET, HEAD/);
  });

  it("answers TRACE on /v1 with 405 in OpenAI's error shape, as TRACE elsewhere gets 405 in the Error body", async () => {
    const v1 = await raw("/v1/chat/completions", "TRACE");
    expect(v1.status).toBe(405);
    expect(v1.allow).toBe("POST");
    expect(v1.body).toEqual({ error: { message: expect.stringMatching(/TRACE is not supported/), type: "invalid_request_error", param: null, code: null } });
    const plants = await raw("/plants", "TRACE");
    expect(plants.status).toBe(405);
    expect(plants.body).toEqual({ error: 405, message: expect.stringMatching(/TRACE is not supported on \/plants/), code: "method_not_allowed" });
  });

  it("still answers an unknown path with 404", async () => {
    await expectError(await h.request("/contexts/x/nothing", { token: alice }), 404, /no such endpoint/);
  });
});

describe("one error handler, two surfaces", () => {
  it("answers a missing credential with the Error body outside /v1 and OpenAI's shape on /v1, both with the challenge", async () => {
    const plain = await h.request("/me");
    expect(plain.headers.get("www-authenticate")).toMatch(/^Bearer/);
    await expectError(plain, 401, /authentication required/);

    const v1 = await h.request("/v1/models");
    expect(v1.status).toBe(401);
    expect(v1.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await v1.json()).toEqual({
      error: { message: expect.stringMatching(/authentication required/), type: "authentication_error", param: null, code: "invalid_api_key" },
    });
  });

  it("answers malformed JSON on /v1 in OpenAI's shape", async () => {
    const res = await h.request("/v1/chat/completions", { method: "POST", token: alice, json: "{nope" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
  });
});

describe("paging", () => {
  it.each(["/plants", "/contexts", "/shares", "/usage/messages"])("takes an empty cursor= on %s as the first page", async (path) => {
    const res = await h.request(`${path}?cursor=`, { token: alice });
    expect(res.status).toBe(200);
  });

  it("still refuses a cursor it did not give out, naming the parameter", async () => {
    await expectError(await h.request("/shares?cursor=abc", { token: alice }), 400, /cursor: must be the nextCursor of a previous page/);
  });
});

describe("what error messages quote of the request", () => {
  it("quotes at most 60 characters of an over-long id, with an ellipsis", async () => {
    const id = "c".repeat(100);
    const body = await expectError(await h.request(`/contexts/${id}`, { token: alice }), 404);
    expect(body.message).toBe(`context ${"c".repeat(60)}… not found`);
  });

  it("escapes control characters it quotes", async () => {
    const body = await expectError(await h.request(`/groups/a%01b`, { method: "DELETE", token: alice }), 404);
    expect(body.message).toBe("group a\\u0001b not found");
  });

  it("refuses an over-long id on DELETE with 400 without quoting it", async () => {
    const body = await expectError(await h.request(`/contexts/${"z".repeat(10_000)}`, { method: "DELETE", token: alice }), 400, /id: must be at most 100 characters/);
    expect(body.message.length).toBeLessThan(100);
  });

  it("quotes an unknown 10,000-character field name as a short excerpt", async () => {
    const body = await expectError(await h.request("/me", { method: "PATCH", token: alice, json: { ["k".repeat(10_000)]: 1 } }), 400, /unknown field/);
    expect(body.message.length).toBeLessThan(200);
  });
});

describe("the OpenAPI document", () => {
  it("declares the MIT license in info", async () => {
    const doc = (await (await h.request("/openapi.json")).json()) as { info: { license: unknown } };
    expect(doc.info.license).toEqual({ name: "MIT", identifier: "MIT" });
  });
});
