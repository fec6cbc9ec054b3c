import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { ensureUserStep } from "../../platform/auth/users";
import { BlobStoreError, type BlobStore } from "../../platform/blob-store";
import type { Config } from "../../platform/config";
import type { PdfjsLoader } from "../../platform/deps";
import { Batch, type Db, type Step } from "../../platform/db";
import { hex, randomId } from "../../platform/encoding";
import { DomainError, excerpt } from "../../platform/errors";
import type { Logger } from "../../platform/log";
import { attachments, messageAttachments, messages } from "../../../schema/index";
import { documentText, sniff, type AttachmentKind } from "./file-kinds";

// ---------------------------------------------------------------------------------------
// Attachments: files a person uploads, then sends with a message. The bytes go to the
// runtime's BlobStore under their SHA-256 (one copy however often uploaded); the row
// (owner, name, sniffed type, size, hash, a document's text) to the database. An upload
// counts against its owner's quota until it is deleted: with its context, with the
// account, or by the daily job when it was never sent.
// ---------------------------------------------------------------------------------------

export interface AttachmentDeps {
  db: Db;
  config: Config;
  log: Logger;
  now: () => Date;
  blobs?: BlobStore;
  /** How the runtime loads pdf.js (the Worker's own module); unpdf's bundled copy without it. */
  pdfjs?: PdfjsLoader;
}

/** What removing files needs (the daily job has no more). */
export type FileDeps = Pick<AttachmentDeps, "db" | "log" | "blobs">;

/** An attachment as the API shows it. */
export interface AttachmentView {
  id: string;
  name: string;
  type: string;
  kind: AttachmentKind;
  size: number;
  pages?: number;
  chars?: number;
}

/** The most text of a document kept in its row (and so sent to a model): D1 keeps a value to 2 MB. */
export const MAX_STORED_TEXT_CHARS = 500_000;
/** The most attachments one message carries. */
export const MAX_MESSAGE_ATTACHMENTS = 10;
/** An upload never sent is deleted by the daily job once it is this old. */
export const UNSENT_MAX_AGE_MS = 24 * 3600_000;

const MIB = 1024 * 1024;

export class AttachmentNotFound extends DomainError {
  constructor(id: string, field?: string) {
    super("attachment_not_found", `attachment ${excerpt(id)} does not exist (or is not yours): upload it with POST /attachments`, field ? { field } : {});
  }
}

/** The file is over its kind's limit (or the request over the largest). */
export class AttachmentTooLarge extends DomainError {
  constructor(what: string, limit: number) {
    super("attachment_too_large", `${what} is over the ${formatBytes(limit)} limit: attach a smaller file`, { field: "file" });
  }
}

/** The bytes on the store could not be written or read. */
export class AttachmentStorageFailed extends DomainError {
  constructor(doing: string) {
    super("storage_unavailable", `the attachment could not be ${doing}: nothing was saved; try again in a minute`, { retryAfterSeconds: 60 });
  }
}

export function formatBytes(bytes: number): string {
  return bytes >= MIB ? `${Math.round((bytes / MIB) * 10) / 10} MB` : `${Math.ceil(bytes / 1024)} KB`;
}

function storeOf(deps: AttachmentDeps): BlobStore {
  if (!deps.blobs) throw new DomainError("attachments_not_configured", "attachments are not set up on this server: a Worker needs its ATTACHMENTS R2 bucket binding (wrangler.toml)");
  return deps.blobs;
}

/**
 * Takes an uploaded file: its type read from its bytes, its kind's size limit, its text
 * (documents), the owner's quota, then the bytes stored under their hash and the row
 * written, whose insert re-checks the quota so that concurrent uploads cannot pass it.
 */
export async function uploadAttachment(deps: AttachmentDeps, principal: Principal, file: { name: string; bytes: Uint8Array }): Promise<AttachmentView> {
  const { config } = deps;
  const blobs = storeOf(deps);
  const name = cleanName(file.name);
  const { bytes } = file;
  const sniffed = await sniff(bytes, name);
  const limit = sniffed.kind === "image" ? config.MAX_IMAGE_BYTES : config.MAX_DOCUMENT_BYTES;
  if (bytes.length > limit) throw new AttachmentTooLarge(`${excerpt(name)} (${formatBytes(bytes.length)})`, limit);
  await requireRoom(deps, principal.userId, bytes.length);
  const extracted = sniffed.kind === "document" ? await documentText(bytes, sniffed.type, name, deps.pdfjs) : undefined;
  // WebCrypto's digest runs off the event loop on Node (libuv's pool) and natively on Workers.
  const sha256 = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)));
  try {
    await blobs.put(sha256, bytes);
  } catch (err) {
    if (err instanceof BlobStoreError) {
      deps.log.error("attachment not stored", { err });
      throw new AttachmentStorageFailed("stored");
    }
    throw err;
  }
  const row = {
    id: randomId("att"),
    userId: principal.userId,
    name,
    type: sniffed.type,
    kind: sniffed.kind,
    size: bytes.length,
    sha256,
    pages: extracted?.pages ?? null,
    text: extracted ? extracted.text.slice(0, MAX_STORED_TEXT_CHARS) : null,
    chars: extracted ? extracted.text.length : null,
    createdAt: deps.now(),
  };
  if (!(await insertWithinQuota(deps, principal, row))) throw quotaError(config.ATTACHMENT_QUOTA_BYTES);
  return viewOf(row);
}

/** A name fit to keep and to send in Content-Disposition: no path, no control characters, at most 200 characters. */
function cleanName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  const clean = Array.from(base.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "").trim()).slice(0, 200).join("");
  return clean || "attachment";
}

function quotaError(quota: number): DomainError {
  return new DomainError(
    "attachment_quota",
    `your attachments would pass your ${formatBytes(quota)} of storage: delete conversations with attachments you no longer need, then upload again`,
    { field: "file" },
  );
}

/** Refuses an upload the quota cannot take, before its text is extracted and its bytes stored. */
async function requireRoom(deps: AttachmentDeps, userId: string, size: number): Promise<void> {
  const [row] = await deps.db.select({ used: sql<number>`coalesce(sum(${attachments.size}), 0)` }).from(attachments).where(eq(attachments.userId, userId));
  if (Number(row?.used ?? 0) + size > deps.config.ATTACHMENT_QUOTA_BYTES) throw quotaError(deps.config.ATTACHMENT_QUOTA_BYTES);
}

/** Inserts the row when the owner's uploads, with it, stay within the quota; false when they would not. */
async function insertWithinQuota(deps: AttachmentDeps, principal: Principal, row: NewRow): Promise<boolean> {
  const batch = new Batch();
  const user = ensureUserStep(deps.db, principal, row.createdAt);
  if (user) batch.add(user);
  const inserted = batch.add({
    sql: `insert into attachments (id, user_id, name, type, kind, size, sha256, pages, text, chars, created_at)
      select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? where (select coalesce(sum(size), 0) from attachments where user_id = ?) + ? <= ? returning id`,
    args: [row.id, row.userId, row.name, row.type, row.kind, row.size, row.sha256, row.pages, row.text, row.chars, row.createdAt.getTime(), row.userId, row.size, deps.config.ATTACHMENT_QUOTA_BYTES],
    fields: ["id"],
    read: (rows) => rows.length === 1,
  });
  return (await batch.run(deps.db))(inserted);
}

type NewRow = Omit<AttachmentRow, "pages" | "chars" | "text"> & { pages: number | null; chars: number | null; text: string | null; createdAt: Date };

export function viewOf(row: { id: string; name: string; type: string; kind: AttachmentKind; size: number; pages?: number | null; chars?: number | null }): AttachmentView {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    kind: row.kind,
    size: row.size,
    ...(row.pages != null ? { pages: row.pages } : {}),
    ...(row.chars != null ? { chars: row.chars } : {}),
  };
}

const rowFields = {
  id: attachments.id,
  userId: attachments.userId,
  name: attachments.name,
  type: attachments.type,
  kind: attachments.kind,
  size: attachments.size,
  sha256: attachments.sha256,
  pages: attachments.pages,
  chars: attachments.chars,
  text: attachments.text,
};
export type AttachmentRow = { [K in keyof typeof rowFields]: (typeof attachments.$inferSelect)[K] };

/** The caller's attachments among `ids` (another's or an unknown id is missing from the map). */
export async function ownAttachments(db: Db, userId: string, ids: string[]): Promise<Map<string, AttachmentRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.select(rowFields).from(attachments).where(and(eq(attachments.userId, userId), inArray(attachments.id, ids)));
  return new Map(rows.map((r) => [r.id, r]));
}

/** The bytes of an attachment; a 503 when the store fails or has lost them. */
export async function bytesOf(deps: AttachmentDeps, row: Pick<AttachmentRow, "sha256" | "id">): Promise<Uint8Array> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await storeOf(deps).get(row.sha256);
  } catch (err) {
    if (!(err instanceof BlobStoreError)) throw err;
    deps.log.error("attachment not read", { err, attachmentId: row.id });
  }
  if (!bytes) {
    if (deps.blobs) deps.log.error("attachment's bytes missing from the store", { attachmentId: row.id, sha256: row.sha256 });
    throw new AttachmentStorageFailed("read");
  }
  return bytes;
}

/**
 * An attachment someone may read: its owner, or anyone holding a live share link whose
 * context holds it (`shareToken`). Undefined otherwise, which the route answers 404.
 */
export async function readableAttachment(db: Db, id: string, who: { userId?: string; shareToken?: string; now: Date }): Promise<AttachmentRow | undefined> {
  if (who.userId !== undefined) {
    const own = (await ownAttachments(db, who.userId, [id])).get(id);
    if (own || who.shareToken === undefined) return own;
  }
  if (who.shareToken === undefined) return undefined;
  const [row] = await db
    .select(rowFields)
    .from(attachments)
    .where(
      and(
        eq(attachments.id, id),
        sql`exists (select 1 from shares s join messages m on m.context_id = s.context_id join message_attachments ma on ma.message_id = m.id
          where s.token = ${who.shareToken} and (s.expires_at is null or s.expires_at > ${who.now.getTime()}) and ma.attachment_id = ${attachments.id})`,
      ),
    );
  return row;
}

/** The attachments of messages, in order, by message id. */
export async function attachmentsOfMessages(db: Db, messageIds: string[]): Promise<Map<string, AttachmentView[]>> {
  const byMessage = new Map<string, AttachmentView[]>();
  if (messageIds.length === 0) return byMessage;
  // D1 binds at most 100 values a statement.
  for (let i = 0; i < messageIds.length; i += 90) {
    const rows = await db
      .select({ messageId: messageAttachments.messageId, ...rowFields })
      .from(messageAttachments)
      .innerJoin(attachments, eq(attachments.id, messageAttachments.attachmentId))
      .where(inArray(messageAttachments.messageId, messageIds.slice(i, i + 90)))
      .orderBy(messageAttachments.messageId, messageAttachments.position);
    for (const row of rows) {
      const list = byMessage.get(row.messageId) ?? [];
      list.push(viewOf(row));
      byMessage.set(row.messageId, list);
    }
  }
  return byMessage;
}

/**
 * The statements that delete a context's attachments (those no message of another context
 * carries) and their links, for the batch that deletes the context; the hashes they free.
 */
export function contextAttachmentDeletions(db: Db, userId: string, contextId: string) {
  const ofContext = sql`select ma.attachment_id from ${messageAttachments} ma join ${messages} m on m.id = ma.message_id where m.context_id = ${contextId} and m.user_id = ${userId}`;
  const elsewhere = sql`exists (select 1 from ${messageAttachments} ma2 join ${messages} m2 on m2.id = ma2.message_id where ma2.attachment_id = ${attachments.id} and m2.context_id <> ${contextId})`;
  return [
    db
      .delete(attachments)
      .where(and(eq(attachments.userId, userId), sql`${attachments.id} in (${ofContext})`, sql`not ${elsewhere}`))
      .returning({ sha256: attachments.sha256 }),
    db.delete(messageAttachments).where(sql`${messageAttachments.messageId} in (select id from ${messages} where context_id = ${contextId} and user_id = ${userId})`),
  ] as const;
}

/**
 * Removes the stored files of `hashes` that no attachment row names any more (another
 * upload of the same bytes keeps them). A failure is logged: the daily job sweeps again.
 */
export async function removeUnusedFiles(deps: FileDeps, hashes: string[]): Promise<void> {
  const unique = [...new Set(hashes)];
  if (unique.length === 0 || !deps.blobs) return;
  const kept = new Set<string>();
  for (let i = 0; i < unique.length; i += 90) {
    const rows = await deps.db.selectDistinct({ sha256: attachments.sha256 }).from(attachments).where(inArray(attachments.sha256, unique.slice(i, i + 90)));
    for (const r of rows) kept.add(r.sha256);
  }
  for (const hash of unique.filter((h) => !kept.has(h))) {
    try {
      await deps.blobs.delete(hash);
    } catch (err) {
      deps.log.warn("could not delete an attachment's file", { sha256: hash, err });
    }
  }
}

/** Deletes uploads no message carries that are older than UNSENT_MAX_AGE_MS, and their files (the daily job). */
export async function deleteUnsentUploads(deps: FileDeps, now: Date): Promise<number> {
  const before = new Date(now.getTime() - UNSENT_MAX_AGE_MS);
  const deleted = await deps.db
    .delete(attachments)
    .where(and(lt(attachments.createdAt, before), sql`not exists (select 1 from ${messageAttachments} ma where ma.attachment_id = ${attachments.id})`))
    .returning({ sha256: attachments.sha256 });
  await removeUnusedFiles(deps, deleted.map((r) => r.sha256));
  return deleted.length;
}

/**
 * The statements that delete every attachment of a person and their links, for the batch
 * that erases the account (src/features/account/erasure.ts); the hashes they free, whose
 * files removeUnusedFiles then removes unless another person's upload keeps them.
 */
export function accountAttachmentDeletions(db: Db, userId: string) {
  return [
    db.delete(messageAttachments).where(sql`${messageAttachments.attachmentId} in (select id from ${attachments} where user_id = ${userId})`),
    db.delete(attachments).where(eq(attachments.userId, userId)).returning({ sha256: attachments.sha256 }),
  ] as const;
}

/**
 * The statement that links a stored user message to its attachments, in order, for the
 * batch that stores the exchange: only the sender's rows that still exist (one deleted
 * meanwhile is left out rather than failing the exchange).
 */
export function linkAttachmentsStep(messageId: string, userId: string, ids: string[]): Step {
  return {
    sql: `insert into message_attachments (message_id, attachment_id, position)
      select ?, a.id, j.key from json_each(?) j join attachments a on a.id = j.value and a.user_id = ?`,
    args: [messageId, JSON.stringify(ids), userId],
    fields: [],
    read: () => undefined,
  };
}
