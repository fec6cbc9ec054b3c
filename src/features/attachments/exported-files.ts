import { Buffer } from "node:buffer";
import { eq, inArray } from "drizzle-orm";
import { attachments, messageAttachments } from "../../../schema/index";
import type { Principal } from "../../platform/auth/principal";
import { bytesOf, uploadAttachment, viewOf, type AttachmentDeps, type AttachmentView } from "./attachments";

// Exports carry the files their messages carry: each message gets `attachments`, each with its
// bytes in base64 (`data`), so that the document alone is the whole conversation.

/** An exported attachment: as the API shows it, with its bytes. */
export type ExportedAttachment = AttachmentView & { data: string };

/** Adds each message's attachments, with their bytes, to an export's contexts (in place, and returned). */
export async function withExportedFiles<D extends { contexts: Array<{ messages: Array<{ id: string; attachments?: ExportedAttachment[] }> }> }>(
  deps: AttachmentDeps,
  userId: string,
  document: D,
): Promise<D> {
  const byId = new Map(document.contexts.flatMap((c) => c.messages.map((m) => [m.id, m] as const)));
  const ids = [...byId.keys()];
  for (let i = 0; i < ids.length; i += 90) {
    const rows = await deps.db
      .select({ messageId: messageAttachments.messageId, id: attachments.id, name: attachments.name, type: attachments.type, kind: attachments.kind, size: attachments.size, sha256: attachments.sha256, pages: attachments.pages, chars: attachments.chars, userId: attachments.userId })
      .from(messageAttachments)
      .innerJoin(attachments, eq(attachments.id, messageAttachments.attachmentId))
      .where(inArray(messageAttachments.messageId, ids.slice(i, i + 90)))
      .orderBy(messageAttachments.messageId, messageAttachments.position);
    for (const row of rows) {
      if (row.userId !== userId) continue;
      const bytes = await bytesOf(deps, row);
      const message = byId.get(row.messageId)!;
      (message.attachments ??= []).push({ ...viewOf(row), data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") });
    }
  }
  return document;
}

/**
 * Uploads the files an imported export carries, as the importer's (sniffed, within the limits
 * and the quota like any upload), and names the attachments on their messages. Before the
 * import's batch: if that batch fails, they are uploads no message carries, which the daily
 * job deletes.
 */
export async function uploadImportedFiles(
  deps: AttachmentDeps,
  principal: Principal,
  contexts: Array<{ messages: Array<{ files?: Array<{ name: string; bytes: Uint8Array }>; attachmentIds?: string[] }> }>,
): Promise<void> {
  for (const message of contexts.flatMap((c) => c.messages)) {
    if (!message.files?.length) continue;
    message.attachmentIds = [];
    for (const file of message.files) message.attachmentIds.push((await uploadAttachment(deps, principal, file)).id);
  }
}
