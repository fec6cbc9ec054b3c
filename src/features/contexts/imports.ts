import { Buffer } from "node:buffer";
import { sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Principal } from "../../platform/auth/principal";
import { ensureUser } from "../../platform/auth/users";
import { randomId, timeOrderedId } from "../../platform/encoding";
import { excerpt } from "../../platform/errors";
import type { Db } from "../../platform/db";
import { attachments, contexts, groups, messageAttachments, messages } from "../../../schema/index";
import { fromChatGpt } from "./chatgpt-import";
import { contextColumns, MAX_INSTRUCTIONS, toContextView, type ContextView } from "./contexts";
import { EXPORT_FORMAT, EXPORT_VERSION } from "./exports";
import {
  at,
  checkAcyclic,
  checkContent,
  IMPORT_LIMITS,
  ImportInvalid,
  importedName,
  isObject,
  saneTime,
  storable,
  type ImportedContext,
  type ImportedMessage,
} from "./imported-contexts";

// ---------------------------------------------------------------------------------------
// Import: this service's export (GET /me/export, GET /contexts/{id}/export?format=json) or
// ChatGPT's conversations.json becomes new contexts of the caller, every branch kept, with
// new ids. The file is checked whole before anything is written, and written in one batch:
// a malformed file is refused naming where, and nothing is ever half imported.
// ---------------------------------------------------------------------------------------

/**
 * Reads an uploaded file: this service's export or ChatGPT's conversations.json (an array
 * of conversations, or one). Throws ImportInvalid naming the first problem.
 */
export function readImport(file: unknown, now: Date): ImportedContext[] {
  let imported: ImportedContext[];
  if (isObject(file) && file.format === EXPORT_FORMAT) imported = fromExport(file, now.getTime());
  else if (Array.isArray(file) || (isObject(file) && "mapping" in file)) imported = fromChatGpt(file, now.getTime());
  else {
    throw new ImportInvalid(
      "",
      "it is neither an export of this service (Settings → Data → Export everything, or a conversation's Export) nor ChatGPT's conversations.json (from ChatGPT's Settings → Data controls → Export)",
    );
  }
  if (imported.length > IMPORT_LIMITS.contexts) {
    throw new ImportInvalid("", `it holds ${imported.length} conversations; import at most ${IMPORT_LIMITS.contexts} at a time`);
  }
  const count = imported.reduce((sum, c) => sum + c.messages.length, 0);
  if (count > IMPORT_LIMITS.messages) throw new ImportInvalid("", `it holds ${count} messages; import at most ${IMPORT_LIMITS.messages} at a time`);
  return imported;
}

/** A time of the file (ISO 8601), or `fallback` when absent; between 2000 and a century from `now`. */
function time(value: unknown, path: string, fallback: number, now: number): number {
  if (value === undefined || value === null) return fallback;
  const ms = typeof value === "string" ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new ImportInvalid(path, "must be a time such as 2026-11-22T12:00:00.000Z");
  return saneTime(ms, path, now, "an ISO 8601 time such as 2026-11-22T12:00:00.000Z");
}

function string(value: unknown, path: string, options: { max?: number; nullable?: boolean } = {}): string | null {
  if (value === null && options.nullable) return null;
  if (typeof value !== "string") throw new ImportInvalid(path, `must be a string${options.nullable ? " or null" : ""}`);
  if (options.max !== undefined && Array.from(value).length > options.max) throw new ImportInvalid(path, `must be at most ${options.max} characters`);
  return storable(value);
}

function boolean(value: unknown, path: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw new ImportInvalid(path, "must be true or false");
  return value;
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new ImportInvalid(path, "must be an array");
  return value;
}

/** This service's export, version 1. Times it lacks are the import's. */
function fromExport(doc: Record<string, unknown>, now: number): ImportedContext[] {
  if (doc.version !== EXPORT_VERSION) throw new ImportInvalid("version", `must be ${EXPORT_VERSION}, the version this service reads`);
  const groupNames = exportedGroups(doc.groups);
  return array(doc.contexts, "contexts").map((c, i) => exportedContext(c, at("contexts", i), groupNames, now));
}

/** The file's groups: each id's name. */
function exportedGroups(value: unknown): Map<string, string> {
  const groupNames = new Map<string, string>();
  array(value ?? [], "groups").forEach((g, i) => {
    const path = at("groups", i);
    if (!isObject(g)) throw new ImportInvalid(path, "must be an object");
    const id = string(g.id, at(path, "id"))!;
    const name = string(g.name, at(path, "name"))!.trim();
    if (name === "" || Array.from(name).length > 100) throw new ImportInvalid(at(path, "name"), "must be 1..100 characters");
    groupNames.set(id, name);
  });
  return groupNames;
}

/** One context of the file, its messages a tree (each parent in the context, no cycle). */
function exportedContext(c: unknown, path: string, groupNames: Map<string, string>, now: number): ImportedContext {
  if (!isObject(c)) throw new ImportInvalid(path, "must be an object");
  const groupId = c.groupId === undefined ? null : string(c.groupId, at(path, "groupId"), { nullable: true });
  if (groupId !== null && !groupNames.has(groupId)) throw new ImportInvalid(at(path, "groupId"), `names no group of this file's "groups"`);
  const nameSource = c.nameSource === undefined ? "person" : c.nameSource;
  if (nameSource !== "person" && nameSource !== "message" && nameSource !== "model") {
    throw new ImportInvalid(at(path, "nameSource"), 'must be "person", "message" or "model"');
  }
  const instructions = c.instructions === undefined ? null : string(c.instructions, at(path, "instructions"), { max: MAX_INSTRUCTIONS, nullable: true });
  const createdAt = time(c.createdAt, at(path, "createdAt"), now, now);

  const messagesPath = at(path, "messages");
  const parents = new Map<string, string | null>();
  const list = array(c.messages ?? [], messagesPath).map((m, j) => exportedMessage(m, at(messagesPath, j), parents, createdAt, now));
  list.forEach((m, j) => {
    if (m.parentKey !== null && !parents.has(m.parentKey)) throw new ImportInvalid(at(at(messagesPath, j), "parentId"), "names no message of this context");
  });
  checkAcyclic(parents, (key) => at(at(messagesPath, list.findIndex((m) => m.key === key)), "parentId"));
  const leafKey = c.leafId === undefined ? null : string(c.leafId, at(path, "leafId"), { nullable: true });
  if (leafKey !== null && !parents.has(leafKey)) throw new ImportInvalid(at(path, "leafId"), "names no message of this context");
  return {
    name: importedName(string(c.name, at(path, "name")), "Imported conversation"),
    nameSource,
    groupName: groupId === null ? null : groupNames.get(groupId)!,
    instructions: instructions?.trim() ? instructions : null,
    pinned: boolean(c.pinned, at(path, "pinned")),
    archived: boolean(c.archived, at(path, "archived")),
    createdAt,
    updatedAt: time(c.updatedAt, at(path, "updatedAt"), createdAt, now),
    leafKey,
    messages: list,
    sourceId: c.id === undefined ? null : string(c.id, at(path, "id"), { max: 200, nullable: true }),
  };
}

/** One message of an exported context; its id and parent's are noted in `parents`. */
function exportedMessage(m: unknown, path: string, parents: Map<string, string | null>, contextCreatedAt: number, now: number): ImportedMessage {
  if (!isObject(m)) throw new ImportInvalid(path, "must be an object");
  const key = string(m.id, at(path, "id"), { max: 200 })!;
  if (parents.has(key)) throw new ImportInvalid(at(path, "id"), `"${excerpt(key)}" is the id of another message of this context`);
  const parentKey = m.parentId === undefined ? null : string(m.parentId, at(path, "parentId"), { nullable: true });
  parents.set(key, parentKey);
  if (m.role !== "user" && m.role !== "assistant") throw new ImportInvalid(at(path, "role"), 'must be "user" or "assistant"');
  const content = string(m.content, at(path, "content"))!;
  return {
    key,
    parentKey,
    role: m.role,
    content: checkContent(content, at(path, "content")),
    model: m.model === undefined ? null : string(m.model, at(path, "model"), { max: 100, nullable: true }),
    createdAt: time(m.createdAt, at(path, "createdAt"), contextCreatedAt, now),
    ...(m.attachments === undefined ? {} : { files: importedFiles(m.attachments, at(path, "attachments")) }),
  };
}

/** Bound text of JSON statements is kept under this many bytes (D1 refuses strings over 2 MB). */
const CHUNK_BYTES = 1_000_000;

/** An exported message's files: each `{ name, data }`, `data` the bytes in base64. */
function importedFiles(value: unknown, path: string): Array<{ name: string; bytes: Uint8Array }> {
  return array(value, path).map((f, k) => {
    const fpath = at(path, k);
    if (!isObject(f)) throw new ImportInvalid(fpath, "must be an object");
    const data = string(f.data, at(fpath, "data"))!;
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw new ImportInvalid(at(fpath, "data"), "must be the file's bytes in base64");
    return { name: string(f.name, at(fpath, "name"), { max: 1000 }) ?? "attachment", bytes: new Uint8Array(Buffer.from(data, "base64")) };
  });
}

/**
 * Creates the contexts read from a file as the caller's, with new ids, in one batch:
 * their groups (found by name, created when missing), the contexts, their messages. The
 * imported contexts lead the list, in the order they were last updated in the file; their
 * messages keep their times. A context the caller already has (imported from the same source
 * before, or their own, by its id in the file) is skipped and counted. Costs no credits. One
 * round trip.
 */
export async function importContexts(db: Db, principal: Principal, imported: ImportedContext[], now: Date): Promise<{ items: ContextView[]; skipped: number }> {
  const userId = principal.userId;
  const statements: BatchItem<"sqlite">[] = [];
  const user = ensureUser(db, principal, now);
  if (user) statements.push(user);
  const groupsMade = groupsStatement(db, userId, imported, now.getTime());
  if (groupsMade) statements.push(groupsMade);
  const rows = importedRows(imported, now.getTime());
  statements.push(...insertStatements(db, userId, rows));
  const created = db
    .select(contextColumns)
    .from(contexts)
    .where(sql`${contexts.userId} = ${userId} and ${contexts.id} in (select value from json_each(${JSON.stringify(rows.ids)}))`);
  // Statements of the query builder only: drizzle's D1 driver cannot put a raw statement
  // with parameters (db.run(sql`…`)) in a batch.
  statements.push(created);
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const byId = new Map((results.at(-1) as Awaited<typeof created>).map((row) => [row.id, toContextView(row)]));
  const items = rows.ids.flatMap((id) => byId.get(id) ?? []);
  return { items, skipped: rows.ids.length - items.length };
}

/** The groups the imported contexts name, made where the caller has none of that name. */
function groupsStatement(db: Db, userId: string, imported: ImportedContext[], nowMs: number): BatchItem<"sqlite"> | undefined {
  const groupNames = [...new Set(imported.map((c) => c.groupName).filter((n): n is string => n !== null))];
  if (groupNames.length === 0) return undefined;
  const rows = JSON.stringify(groupNames.map((name) => [randomId("grp"), name]));
  return db
    .insert(groups)
    .select(sql`select json_extract(value, '$[0]'), ${userId}, json_extract(value, '$[1]'), ${nowMs}, ${nowMs} from json_each(${rows}) where true`)
    .onConflictDoNothing({ target: [groups.userId, groups.name] });
}

/** The rows to insert, as JSON arrays, with new ids; `ids`: the contexts', in the file's order. */
function importedRows(imported: ImportedContext[], nowMs: number) {
  // The newest in the file is the newest of all; the others just before it, in order.
  const order = imported.map((c, i) => ({ c, i })).sort((a, b) => a.c.updatedAt - b.c.updatedAt || a.i - b.i);
  const updatedAt = new Map(order.map(({ i }, rank) => [i, nowMs - (order.length - 1 - rank)]));
  const contextRows: unknown[][] = [];
  const messageRows: unknown[][] = [];
  const linkRows: unknown[][] = [];
  const ids: string[] = [];
  imported.forEach((c, i) => {
    const contextId = randomId("ctx");
    ids.push(contextId);
    const idOf = new Map(c.messages.map((m) => [m.key, timeOrderedId("msg")]));
    for (const m of c.messages) {
      messageRows.push([idOf.get(m.key), contextId, m.role, m.content, m.model, m.parentKey === null ? null : idOf.get(m.parentKey), m.createdAt]);
      for (const [position, attachmentId] of (m.attachmentIds ?? []).entries()) linkRows.push([idOf.get(m.key), attachmentId, position]);
    }
    const leaf = c.leafKey === null ? newestLeaf(c.messages, idOf) : idOf.get(c.leafKey);
    contextRows.push([contextId, c.name, c.nameSource, c.groupName, c.instructions, c.pinned ? 1 : 0, c.archived ? 1 : 0, leaf, c.messages.length, c.createdAt, updatedAt.get(i), c.sourceId]);
  });
  return { contextRows, messageRows, linkRows, ids };
}

/** The inserts of the contexts (but those already here), their messages and their attachments' links, in chunks. */
function insertStatements(db: Db, userId: string, rows: ReturnType<typeof importedRows>): BatchItem<"sqlite">[] {
  const statements: BatchItem<"sqlite">[] = [];
  for (const chunk of chunks(rows.contextRows)) {
    // The select's values in the table's column order, which is the order insert…select writes them in.
    statements.push(
      db.insert(contexts).select(
        sql`select json_extract(value, '$[0]'), ${userId},
          (select g.id from ${groups} g where g.user_id = ${userId} and g.name = json_extract(value, '$[3]')),
          json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[8]'), json_extract(value, '$[7]'),
          json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[9]'), json_extract(value, '$[10]'),
          json_extract(value, '$[11]')
        from json_each(${chunk})
        -- Already here: imported from the same source before, or this account's own context.
        -- Two lookups, each by its index (the one by source holds only imported contexts).
        where json_extract(value, '$[11]') is null or (
          not exists (select 1 from ${contexts} c where c.user_id = ${userId} and c.imported_from = json_extract(value, '$[11]'))
          and not exists (select 1 from ${contexts} c where c.id = json_extract(value, '$[11]') and c.user_id = ${userId}))`,
      ),
    );
  }
  for (const chunk of chunks(rows.messageRows)) {
    statements.push(
      db.insert(messages).select(
        sql`select json_extract(value, '$[0]'), json_extract(value, '$[1]'), ${userId}, json_extract(value, '$[2]'), json_extract(value, '$[3]'),
          json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), 'done', null
        from json_each(${chunk})
        -- Only the messages of the contexts just made (the others were skipped).
        where exists (select 1 from ${contexts} c where c.id = json_extract(value, '$[1]'))`,
      ),
    );
  }
  for (const chunk of chunks(rows.linkRows)) {
    // Only the importer's own attachments (those the route uploaded from the file).
    statements.push(
      db.insert(messageAttachments).select(
        sql`select json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
        from json_each(${chunk}) where exists (select 1 from ${attachments} a where a.id = json_extract(value, '$[1]') and a.user_id = ${userId})`,
      ),
    );
  }
  return statements;
}

/** The newest message no other follows: where a file that names no active branch ends it. */
function newestLeaf(list: ImportedMessage[], idOf: Map<string, string>): string | null {
  const parents = new Set(list.map((m) => m.parentKey));
  const leaves = list.filter((m) => !parents.has(m.key));
  const newest = leaves.reduce<ImportedMessage | null>((best, m) => (best === null || m.createdAt >= best.createdAt ? m : best), null);
  return newest ? idOf.get(newest.key)! : null;
}

/** Rows as JSON texts of at most CHUNK_BYTES each (a row over it goes alone). */
function* chunks(rows: unknown[][]): Generator<string> {
  let part: string[] = [];
  let bytes = 2;
  for (const row of rows) {
    const text = JSON.stringify(row);
    const size = new TextEncoder().encode(text).length + 1;
    if (part.length > 0 && bytes + size > CHUNK_BYTES) {
      yield `[${part.join(",")}]`;
      part = [];
      bytes = 2;
    }
    part.push(text);
    bytes += size;
  }
  if (part.length > 0) yield `[${part.join(",")}]`;
}
