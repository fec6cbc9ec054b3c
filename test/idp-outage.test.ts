import { afterEach, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness } from "./support/harness";

// An identity provider that cannot be reached is the service's trouble, not the caller's:
// a valid token is answered 503 with Retry-After (never a 401, which tells clients to sign
// in again), the outage never counts as a failed authentication, and keys already known keep
// verifying the tokens they signed. The tests move the clock (Date: the key set's ages and
// retries) rather than wait for it.

let h: Harness | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await h?.close();
  h = undefined;
});

async function get(base: string, token: string) {
  const res = await fetch(`${base}/credits`, { headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { code?: string; message?: string } };
}

describe("an identity provider outage", () => {
  it("answers 503 with Retry-After to 40 valid tokens, none counted against the address", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    h = await createHarness({ env: { AUTH_FAILURES_PER_MINUTE: "30", AUTH_KEYS_MAX_AGE_SECONDS: "1" } });
    h.idp.setJwksMode("down");
    const base = await h.listen(); // through a socket, so failures would be counted per address
    const tokens = await Promise.all(Array.from({ length: 40 }, (_, i) => h!.signIn(`outage-${i}`)));
    for (const token of tokens) {
      const res = await get(base, token);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(res.headers.get("www-authenticate")).toBeNull();
      expect(res.body.code).toBe("identity_provider_unavailable");
      expect(res.body.message).toMatch(/keys .* could not be fetched; try again shortly/);
    }
    // It asked the provider now and then, not once per request.
    expect(h.idp.jwksHits()).toBeLessThan(5);

    // Back up: the same address signs in at once; nothing locked it out.
    h.idp.setJwksMode("up");
    vi.advanceTimersByTime(1100);
    expect((await get(base, tokens[0]!)).status).toBe(200);
  });

  it("answers 503, not 401, when the provider's key endpoint hangs", async () => {
    h = await createHarness();
    h.idp.setJwksMode("hang");
    const base = await h.listen();
    const started = Date.now();
    const res = await get(base, await h.signIn("hang"));
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("identity_provider_unavailable");
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);

  it("keeps verifying tokens with the keys it knows, past their age, while the provider is down", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    h = await createHarness({ env: { AUTH_KEYS_MAX_AGE_SECONDS: "1" } });
    const base = await h.listen();
    expect((await get(base, await h.signIn("known-1"))).status).toBe(200); // the keys are fetched

    const rotated = await h.idp.rotateIn(); // a key the service has not seen yet
    vi.advanceTimersByTime(1100); // the keys are past their age
    h.idp.setJwksMode("down");

    // A token never seen before, signed with a known key: verified with the last known keys.
    expect((await get(base, await h.signIn("known-2"))).status).toBe(200);
    // A forged token (another key, the known kid) is still refused as a bad token.
    const forged = await h.signIn("known-3");
    const [head, payload] = forged.split(".");
    const other = await h.signIn("known-4");
    const refused = await get(base, `${head}.${payload}.${other.split(".")[2]}`);
    expect(refused.status).toBe(401);
    // A token signed with a key it cannot know while the provider is down: 503, not 401.
    const unknownKid = await get(base, await rotated.sign("user:known-5"));
    expect(unknownKid.status).toBe(503);
    expect(unknownKid.body.code).toBe("identity_provider_unavailable");

    // Back up: the new key is fetched and works.
    h.idp.setJwksMode("up");
    vi.advanceTimersByTime(1100);
    expect((await get(base, await rotated.sign("user:known-5"))).status).toBe(200);
  });
});
