import { env, exports } from "cloudflare:workers";
import { importJWK, SignJWT, type JWTPayload } from "jose";

/** The Authorization header of a user signed in with the run's identity-provider key (with more claims: a verified e-mail, say). */
export async function signIn(name: string, claims: JWTPayload = {}): Promise<Record<string, string>> {
  const key = await importJWK(JSON.parse(env.TEST_PRIVATE_JWK), "ES256");
  const token = await new SignJWT({ name, ...claims })
    .setProtectedHeader({ alg: "ES256" })
    .setIssuer(env.AUTH_ISSUER)
    .setAudience(env.AUTH_AUDIENCE)
    .setSubject(`user:${name}`)
    .setExpirationTime("10m")
    .sign(key);
  return { Authorization: `Bearer ${token}` };
}

/** A request to the real Worker's fetch handler. */
export const call = (path: string, init: RequestInit = {}) =>
  exports.default.fetch(new Request(`https://worker.test${path}`, init));
