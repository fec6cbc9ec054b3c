import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ERROR_CODES, openAiShapeOf } from "../src/platform/error-codes";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// Every error body carries a stable `code` (docs/api.md lists them); these are the ones a
// client is most likely to branch on, each as the service's domain error reaches the wire.

let up: FakeUpstream;
let h: Harness;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({
    env: { SVC_MODEL_BASE_URL: up.baseUrl, MODEL_TIMEOUT_MS: "300", DAILY_CREDITS: "2" },
  });
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
});

const send = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  h.request("/chat/send", { method: "POST", token, json: body, headers });

describe("error codes", () => {
  it("names an unknown model model_not_found, 400 on /chat/send and 404 on /v1 with param model", async () => {
    const token = await h.signIn("codes-model");
    const body = await expectError(await send(token, { message: "hi", model: "nope" }), 400, /unknown model 'nope'/, "model_not_found");
    expect(body.message).toMatch(/svc-70b/);

    const v1 = await h.request("/v1/chat/completions", { method: "POST", token, json: { model: "nope", messages: [{ role: "user", content: "hi" }] } });
    expect(v1.status).toBe(404);
    expect(await v1.json()).toEqual({
      error: { message: expect.stringMatching(/does not exist/), type: "not_found_error", param: "model", code: "model_not_found" },
    });
  });

  it("names a model whose provider is not configured model_not_configured (503)", async () => {
    const token = await h.signIn("codes-unconfigured");
    await expectError(await send(token, { message: "hi", model: "gpt-4o" }), 503, /not configured/, "model_not_configured");
  });

  it("names another user's context context_not_found, and /v1 says param context_id", async () => {
    const alice = await h.signIn("codes-alice");
    const bob = await h.signIn("codes-bob");
    const { contextId } = (await (await send(alice, { message: "mine" })).json()) as { contextId: string };
    await expectError(await send(bob, { message: "hi", contextId }), 404, /not found/, "context_not_found");

    const v1 = await h.request("/v1/chat/completions", {
      method: "POST",
      token: bob,
      json: { model: "svc-70b", context_id: contextId, messages: [{ role: "user", content: "hi" }] },
    });
    expect(v1.status).toBe(404);
    expect(await v1.json()).toMatchObject({ error: { type: "not_found_error", param: "context_id", code: "context_not_found" } });
  });

  it("names a failed and a timed-out model model_failed (502) and model_timeout (504)", async () => {
    const token = await h.signIn("codes-upstream");
    up.mode = "fail";
    await expectError(await send(token, { message: "hi" }), 502, /failed to answer/, "model_failed");
    up.mode = "slow";
    await expectError(await send(token, { message: "hi" }), 504, /did not answer within/, "model_timeout");
  });

  it("names spent credits credits_used_up (402) with Retry-After and the credit headers", async () => {
    const token = await h.signIn("codes-credits");
    for (let i = 0; i < 2; i++) expect((await send(token, { message: `m${i}` })).status).toBe(200);
    const refused = await send(token, { message: "one more" });
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(refused.headers.get("x-credits-remaining")).toBe("0");
    expect(refused.headers.get("x-credits-reset")).toBe("2026-11-23T00:00:00.000Z");
    await expectError(refused, 402, /insufficient credits/, "credits_used_up");
  });

  it("names a reused Idempotency-Key idempotency_key_reused (422)", async () => {
    const token = await h.signIn("codes-idempotency");
    const key = { "Idempotency-Key": "codes-key-1" };
    expect((await send(token, { message: "first" }, key)).status).toBe(200);
    await expectError(await send(token, { message: "a different message" }, key), 422, /already used for a different request/, "idempotency_key_reused");
  });

  it("gives HTTP-layer refusals their codes too", async () => {
    await expectError(await h.request("/plants"), 401, /authentication required/, "unauthenticated");
    const token = await h.signIn("codes-http");
    await expectError(await h.request("/plants", { method: "POST", token, json: { id: 1 } }), 400, /name/, "invalid_request");
    await expectError(await h.request("/plants/7", { method: "DELETE", token }), 404, /plant 7 not found/, "plant_not_found");
    expect((await h.request("/plants", { method: "POST", token, json: { id: 7, name: "Fern" } })).status).toBe(200);
    await expectError(await h.request("/plants", { method: "POST", token, json: { id: 7, name: "Fern" } }), 409, /already exists/, "plant_exists");
  });
});

describe("the list of error codes", () => {
  // docs/api.md's table of codes, read as a client reads it: each row's codes and statuses
  // (a row of several codes has one status for all, or one each, in order), and the
  // paragraph of generic codes, `code` (status).
  function documented(): Map<string, number> {
    const doc = readFileSync(resolve(import.meta.dirname, "../docs/api.md"), "utf8");
    const section = doc.slice(doc.indexOf("### Error codes"), doc.indexOf("## Paging"));
    const codes = new Map<string, number>();
    for (const line of section.split("\n")) {
      const cells = line.split("|").map((c) => c.trim());
      if (cells.length < 4 || !cells[1]!.startsWith("`")) continue;
      const names = [...cells[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
      const statuses = [...cells[2]!.replace(/\(.*\)/, "").matchAll(/\d{3}/g)].map((m) => Number(m[0]));
      for (const [i, name] of names.entries()) codes.set(name, statuses.length === names.length ? statuses[i]! : statuses[0]!);
    }
    for (const m of section.matchAll(/`([a-z_]+)` \((\d{3})\)/g)) codes.set(m[1]!, Number(m[2]));
    return codes;
  }

  it("is docs/api.md's table of codes, status for status", () => {
    const listed = new Map(Object.entries(ERROR_CODES).map(([code, spec]) => [code, spec.status as number]));
    expect(Object.fromEntries(documented())).toEqual(Object.fromEntries(listed));
  });

  it("gives /v1 OpenAI's status, type and code where OpenAI's clients expect them", () => {
    expect(openAiShapeOf("model_not_found", 400)).toEqual({ status: 404, type: "not_found_error", code: "model_not_found" });
    expect(openAiShapeOf("credits_used_up", 402)).toEqual({ status: 402, type: "insufficient_quota", code: "insufficient_quota" });
    expect(openAiShapeOf("plant_not_found", 404)).toEqual({ status: 404, type: "not_found_error", code: null });
  });
});
