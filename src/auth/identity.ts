import { encodeBase64url } from "./encoding";

/**
 * The internal user id for an identity-provider identity. Derived, not looked up, so a
 * request authenticated by JWT knows its user without a database round trip; the row is
 * created on first sight by the first write that needs it (src/services/users.ts).
 */
export async function userIdFor(issuer: string, subject: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${issuer}\u0000${subject}`));
  return `usr_${encodeBase64url(new Uint8Array(digest).slice(0, 16))}`;
}
