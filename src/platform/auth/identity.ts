import QuickLRU from "quick-lru";
import { encodeBase64url } from "../encoding";

/**
 * The internal user id for an identity-provider identity. Derived, not looked up, so a
 * request authenticated by JWT knows its user without a database round trip; the row is
 * created on first sight by the first write that needs it (src/platform/auth/users.ts).
 */
export async function userIdFor(issuer: string, subject: string): Promise<string> {
  const identity = `${issuer}\u0000${subject}`;
  const known = recent.get(identity);
  if (known) return known;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(identity));
  const id = `usr_${encodeBase64url(new Uint8Array(digest).slice(0, 16))}`;
  recent.set(identity, id);
  return id;
}

/** A bounded memo: the id never changes for an identity, so any entry is always right. */
const recent = new QuickLRU<string, string>({ maxSize: 10_000 });
