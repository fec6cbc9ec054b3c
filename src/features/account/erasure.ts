import { eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../platform/db";
import type { EndedSessions } from "../../platform/auth/ended-sessions";
import type { IdentityLinks } from "../../platform/auth/identity-links";
import { userIdFor } from "../../platform/auth/identity";
import { apiKeys, contexts, groups, identities, messages, sessions, shares, usageEvents, users } from "../../../schema/index";
import { accountAttachmentDeletions, removeUnusedFiles, type FileDeps } from "../attachments/attachments";
import { endSessionStatements } from "../sign-in/sessions";
import { eraseFromRollups } from "./usage-rollups";

// ---------------------------------------------------------------------------------------
// Erasure on request (DELETE /me, DELETE /admin/users/{id}): one batch ends every session,
// revokes every key and deletes the person's contexts, messages (and their search entries),
// attachments, shares, groups, profile, presets and sign-in methods; usage rows stay,
// pointing at nobody (and the usage rollups' rows of the person are added to the erased
// accounts'). Then the attachments' files go, but for those the same bytes uploaded by
// someone else still keep. The same identity signing in later gets a new, empty account.
// ---------------------------------------------------------------------------------------

export interface ErasureDeps extends FileDeps {
  db: Db;
  endedSessions: EndedSessions;
  identityLinks: IdentityLinks;
  now: () => Date;
}

/** The account's erasure, in one batch; `before` joins it first (an admin's audit record). Throws `notFound` for no such account. */
export async function eraseAccount(deps: ErasureDeps, userId: string, notFound: () => Error, before: BatchItem<"sqlite">[] = []): Promise<void> {
  const { db } = deps;
  const now = deps.now();
  const methods = await db.select({ issuer: identities.issuer, subject: identities.subject }).from(identities).where(eq(identities.userId, userId));
  const [ended, , files, ...rest] = await db.batch([
    endSessionStatements(db, eq(sessions.userId, userId), "erased", now)[0],
    // Its attachments first, while their links still say which (not leaning on ON DELETE CASCADE).
    ...accountAttachmentDeletions(db, userId),
    ...before,
    db.delete(sessions).where(eq(sessions.userId, userId)),
    // Usage stays for the operator's totals, with nothing that points at the person.
    db.update(usageEvents).set({ userId: null, contextId: null, messageId: null, keyId: null }).where(eq(usageEvents.userId, userId)),
    ...eraseFromRollups(db, userId),
    db.delete(apiKeys).where(eq(apiKeys.userId, userId)),
    db.delete(shares).where(eq(shares.userId, userId)),
    // Messages and contexts one by one, so that their search triggers take the entries too.
    db.delete(messages).where(eq(messages.userId, userId)),
    db.delete(contexts).where(eq(contexts.userId, userId)),
    db.delete(groups).where(eq(groups.userId, userId)),
    db.delete(identities).where(eq(identities.userId, userId)),
    db.delete(users).where(eq(users.id, userId)).returning({ id: users.id }),
  ]);
  const deleted = rest.at(-1) as unknown[];
  if (deleted.length === 0) throw notFound();
  deps.endedSessions.note(ended);
  // Bearer tokens of its sign-in methods now reach a new account of their own.
  for (const m of methods) deps.identityLinks.noteLink(m.issuer, m.subject, await userIdFor(m.issuer, m.subject));
  // The rows are gone, committed: a file this cannot remove now is one no row names, which the daily job sweeps.
  await removeUnusedFiles(deps, files.map((f) => f.sha256)).catch((err) => deps.log.error("an erased account's files were not removed", { err, userId }));
}
