import { randomBytes } from "node:crypto";
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// Over real sockets on 127.0.0.1, so the limit sees the client address the Node server
// takes from the connection. The harness clock stands still: every request below falls in
// one minute.

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await createHarness({ env: { AUTH_FAILURES_PER_MINUTE: "30" } });
  h.clock.set("2026-11-22T12:00:15.000Z");
  base = await h.listen();
});
afterAll(() => h.close());

const get = (path: string, headers: Record<string, string>) => fetch(`${base}${path}`, { headers });

/** A token in the right shape from the right issuer, signed by a key the service does not trust. */
async function forgedToken(sub: string) {
  const { privateKey } = await generateKeyPair("ES256");
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: "test-key-1" })
    .setIssuer(h.idp.issuer)
    .setAudience(h.idp.audience)
    .setSubject(sub)
    .setExpirationTime("1h")
    .sign(privateKey);
}

async function statuses(requests: Array<() => Promise<Response>>) {
  const seen: number[] = [];
  for (const send of requests) {
    const res = await send();
    seen.push(res.status);
    await res.body?.cancel();
  }
  return seen;
}

describe("failed authentication from one address", () => {
  it("is answered 401 up to the limit, then 429 with Retry-After, while a valid user there still gets through", async () => {
    const forged = await forgedToken("user:mallory");
    const seen = await statuses(Array.from({ length: 400 }, () => () => get("/plants", { Authorization: `Bearer ${forged}` })));
    expect(seen.slice(0, 30).every((s) => s === 401)).toBe(true);
    expect(seen.slice(30).every((s) => s === 429)).toBe(true);

    const refused = await get("/plants", { Authorization: `Bearer ${forged}` });
    const body = await expectError(refused, 429, /too many failed authentications from this address/);
    expect(refused.headers.get("retry-after")).toBe("45");
    expect(body.message).toContain("retry in 45 s");

    // The same address, with a valid token: never slowed by others' failures.
    const alice = await h.signIn("alice");
    for (let i = 0; i < 5; i++) expect((await get("/plants", { Authorization: `Bearer ${alice}` })).status).toBe(200);

    // A request with no credential at all is not a failed authentication: still a 401.
    await expectError(await get("/plants", {}), 401, /authentication required/);
  });

  it("counts unknown API keys too, and a valid API key from that address still works", async () => {
    h.clock.set("2026-11-22T12:01:15.000Z"); // a new minute, a fresh count
    const alice = await h.signIn("alice");
    const created = await h.request("/keys", { method: "POST", token: alice, json: { name: "cli" } });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };

    const seen = await statuses(
      Array.from({ length: 400 }, () => () => get("/plants", { "X-API-Key": `sk_${randomBytes(24).toString("base64url")}` })),
    );
    expect(seen.slice(0, 30).every((s) => s === 401)).toBe(true);
    expect(seen.slice(30).every((s) => s === 429)).toBe(true);

    expect((await get("/plants", { "X-API-Key": key })).status).toBe(200);
    // On /v1 the refusal comes in OpenAI's error shape.
    const v1 = await get("/v1/models", { Authorization: "Bearer sk_not-a-real-key" });
    expect(v1.status).toBe(429);
    expect(((await v1.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");

    // The window turns: the address may try again.
    h.clock.advance(60_000);
    expect((await get("/plants", { "X-API-Key": "sk_still-wrong" })).status).toBe(401);
  });
});

describe("the client address", () => {
  it("ignores X-Forwarded-For unless CLIENT_IP_HEADER names a header to trust", async () => {
    const trusting = await createHarness({ env: { AUTH_FAILURES_PER_MINUTE: "2", CLIENT_IP_HEADER: "X-Forwarded-For" } });
    try {
      const url = await trusting.listen();
      const send = (forwardedFor: string) =>
        fetch(`${url}/plants`, { headers: { Authorization: "Bearer sk_wrong", "X-Forwarded-For": forwardedFor } });
      // The proxy appends the address it saw; that last entry is the client.
      expect((await send("6.6.6.6, 10.0.0.1")).status).toBe(401);
      expect((await send("7.7.7.7, 10.0.0.1")).status).toBe(401);
      expect((await send("10.0.0.1")).status).toBe(429);
      expect((await send("10.0.0.2")).status).toBe(401);
      // An IPv6 client holds a whole /64: its addresses share one count.
      expect((await send("2001:db8:1:2::1")).status).toBe(401);
      expect((await send("2001:db8:1:2:ffff:0:0:7")).status).toBe(401);
      expect((await send("2001:0db8:0001:0002::abcd")).status).toBe(429);
      expect((await send("2001:db8:1:3::1")).status).toBe(401);
      // An IPv4 address written as IPv6 is that IPv4 address.
      expect((await send("::ffff:10.0.0.2")).status).toBe(401);
      expect((await send("::FFFF:10.0.0.2")).status).toBe(429);
    } finally {
      await trusting.close();
    }

    // Not configured (the harness above in this file): a forged header changes nothing.
    h.clock.advance(60_000);
    const forged = await statuses(
      Array.from({ length: 31 }, (_, i) => () => get("/plants", { Authorization: "Bearer sk_wrong", "X-Forwarded-For": `10.1.0.${i}` })),
    );
    expect(forged.at(-1)).toBe(429);
  });

  it("can be turned off with AUTH_FAILURES_PER_MINUTE=0", async () => {
    const open = await createHarness({ env: { AUTH_FAILURES_PER_MINUTE: "0" } });
    try {
      const url = await open.listen();
      const seen = await statuses(Array.from({ length: 50 }, () => () => fetch(`${url}/plants`, { headers: { "X-API-Key": "sk_wrong" } })));
      expect(seen.every((s) => s === 401)).toBe(true);
    } finally {
      await open.close();
    }
  });
});
