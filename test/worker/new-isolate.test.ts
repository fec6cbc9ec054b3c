import { env } from "cloudflare:workers";
import { importJWK, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { call, signIn } from "./support";

// Ended stays ended in the Worker (issue 24). This file runs alone in an isolate no other test
// has used (vitest.new-isolate.config.ts), so its test is a new isolate meeting what other
// isolates left in D1: a session they ended and a sign-in method they removed. Neither may
// work here, at the first request.

const ORIGIN = "https://worker.test";
const _json = { "Content-Type": "application/json" };
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** An access token of a session, signed with the Worker's own session key, as POST /auth/session issues them. */
async function sessionToken(userId: string, sessionId: string): Promise<string> {
  const jwk = JSON.parse(env.SESSION_SIGNING_KEY) as { kid: string };
  return new SignJWT({ sid: sessionId, method: "wallet" })
    .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "at+jwt" })
    .setIssuer(ORIGIN)
    .setAudience(ORIGIN)
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime("15m")
    .sign(await importJWK(jwk, "ES256"));
}

describe("a new isolate", () => {
  it("refuses, at its first request, a session another isolate ended and a sign-in method another isolate removed", async () => {
    const now = Date.now();
    // What the isolate that ended the session wrote beside deleting it.
    await env.DB.prepare("insert into ended_sessions (session_id, user_id, reason, ended_at, tokens_expire_at) values (?, ?, 'signed-out', ?, ?)")
      .bind("ses_elsewhere_000000000000", "usr_elsewhere_0000000000", now, now + 15 * 60_000 + 5000)
      .run();
    // What removing the identity that made an account leaves: its row, with no account.
    await env.DB.prepare("insert into identities (id, user_id, issuer, subject, own_id, label, created_at) values ('idn_removed_00000000000000', null, ?, 'user:removed-elsewhere', 1, 'x', ?)")
      .bind(env.AUTH_ISSUER, now)
      .run();

    const ended = await call("/me", { headers: bearer(await sessionToken("usr_elsewhere_0000000000", "ses_elsewhere_000000000000")) });
    expect(ended.status).toBe(401);
    expect(((await ended.json()) as { message: string }).message).toMatch(/session has ended/);
    const removed = await call("/plants", { headers: await signIn("removed-elsewhere") });
    expect(removed.status).toBe(401);
    expect(((await removed.json()) as { message: string }).message).toMatch(/removed from its account/);
  });
});

