import { and, asc, desc, eq, gt, isNull, or } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import type { Db } from "../../platform/db";
import { apiKeys, contexts, creditDays, groups, messages, shares, usageEvents } from "../../../schema/index";
import { getProfile, type Profile } from "../account/profile";
import { contextColumns, readActiveBranch, type ContextRow, type NameSource } from "./contexts";
import { ContextNotFound } from "./errors";
import { isoTime } from "../../platform/stored-time";

// ---------------------------------------------------------------------------------------
// Exports: a context, or everything a person owns, as one JSON document that
// POST /contexts/import takes back (imports.ts), and a context's active branch as Markdown
// for reading. The document keeps every branch: each message names its parent.
// ---------------------------------------------------------------------------------------

/** What marks a document as this service's export, and the version of its shape. */
export const EXPORT_FORMAT = "plant-chat-export";
export const EXPORT_VERSION = 1;

export interface ExportedMessage {
  id: string;
  parentId: string | null;
  role: "user" | "assistant";
  content: string;
  model?: string;
  createdAt: string;
  /** The files it carries, with their bytes (added by the route: attachments/exported-files.ts). */
  attachments?: Array<{ id: string; name: string; type: string; kind: "image" | "document"; size: number; pages?: number; chars?: number; data: string }>;
}

export interface ExportedContext {
  id: string;
  name: string;
  nameSource: NameSource;
  groupId: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  leafId: string | null;
  createdAt: string;
  updatedAt: string;
  /** Every message of every branch, oldest first. */
  messages: ExportedMessage[];
}

export interface ExportedGroup {
  id: string;
  name: string;
  createdAt: string;
}

export interface ExportDocument {
  format: typeof EXPORT_FORMAT;
  version: typeof EXPORT_VERSION;
  exportedAt: string;
  /** GET /me/export only. */
  profile?: Omit<Profile, "createdAt" | "role"> & { createdAt: string };
  groups: ExportedGroup[];
  contexts: ExportedContext[];
  /** GET /me/export only: the live share links (their URL is added by the route). */
  shares?: Array<{ token: string; contextId: string; createdAt: string; expiresAt: string | null }>;
  /** GET /me/export only: the API keys, without their secrets. */
  apiKeys?: Array<{ id: string; name: string; prefix: string; createdAt: string; lastUsedAt: string | null }>;
  /** GET /me/export only: credits used per day and per message, as kept (90 days). */
  usage?: {
    days: Array<{ day: string; used: number }>;
    messages: Array<{ at: string; model: string; contextId: string | null; messageId: string | null; credits: number }>;
  };
}

const iso = isoTime;

const messageColumns = {
  id: messages.id,
  contextId: messages.contextId,
  parentId: messages.parentId,
  role: messages.role,
  content: messages.content,
  model: messages.model,
  createdAt: messages.createdAt,
};
interface MessageRow {
  id: string;
  contextId: string;
  parentId: string | null;
  role: "user" | "assistant";
  content: string;
  model: string | null;
  createdAt: Date;
}

function exportedContext(row: ContextRow, rows: MessageRow[]): ExportedContext {
  return {
    id: row.id,
    name: row.name,
    nameSource: row.nameSource,
    groupId: row.groupId,
    instructions: row.instructions,
    pinned: row.pinned,
    archived: row.archived,
    leafId: row.leafId,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
    messages: rows.map((m) => ({
      id: m.id,
      parentId: m.parentId,
      role: m.role,
      content: m.content,
      ...(m.model === null ? {} : { model: m.model }),
      createdAt: iso(m.createdAt),
    })),
  };
}

/** Groups messages by context, keeping their order. */
function byContext(rows: MessageRow[]): Map<string, MessageRow[]> {
  const map = new Map<string, MessageRow[]>();
  for (const row of rows) {
    let list = map.get(row.contextId);
    if (!list) map.set(row.contextId, (list = []));
    list.push(row);
  }
  return map;
}

/** One of the owner's contexts, every branch, with its group. One round trip. */
export async function exportContext(db: Db, userId: string, contextId: string, now: Date): Promise<ExportDocument> {
  const [found, rows, group] = await db.batch([
    db.select(contextColumns).from(contexts).where(and(eq(contexts.id, contextId), eq(contexts.userId, userId))),
    db
      .select(messageColumns)
      .from(messages)
      .where(and(eq(messages.contextId, contextId), eq(messages.userId, userId)))
      .orderBy(asc(messages.createdAt), asc(messages.id)),
    db
      .select({ id: groups.id, name: groups.name, createdAt: groups.createdAt })
      .from(groups)
      .innerJoin(contexts, eq(contexts.groupId, groups.id))
      .where(and(eq(contexts.id, contextId), eq(groups.userId, userId))),
  ]);
  if (!found[0]) throw new ContextNotFound(contextId);
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: iso(now),
    groups: group.map((g) => ({ id: g.id, name: g.name, createdAt: iso(g.createdAt) })),
    contexts: [exportedContext(found[0], rows)],
  };
}

/**
 * Everything the person owns: profile (with presets), groups, contexts with every branch,
 * live share links, API keys (never their secrets) and usage. Read in one round trip (and
 * the profile's). It is built in memory: its size is the person's data.
 */
export async function exportAccount(db: Db, principal: Principal, now: Date, defaultModel: string): Promise<ExportDocument> {
  const userId = principal.userId;
  const profile = await getProfile(db, principal, now, defaultModel);
  const [groupRows, contextRows, messageRows, shareRows, keyRows, dayRows, usageRows] = await db.batch([
    db.select({ id: groups.id, name: groups.name, createdAt: groups.createdAt }).from(groups).where(eq(groups.userId, userId)).orderBy(asc(groups.name)),
    db.select(contextColumns).from(contexts).where(eq(contexts.userId, userId)).orderBy(desc(contexts.updatedAt), desc(contexts.id)),
    db.select(messageColumns).from(messages).where(eq(messages.userId, userId)).orderBy(asc(messages.contextId), asc(messages.createdAt), asc(messages.id)),
    db
      .select({ token: shares.token, contextId: shares.contextId, createdAt: shares.createdAt, expiresAt: shares.expiresAt })
      .from(shares)
      .where(and(eq(shares.userId, userId), or(isNull(shares.expiresAt), gt(shares.expiresAt, now))))
      .orderBy(desc(shares.createdAt)),
    db
      .select({ id: apiKeys.id, name: apiKeys.name, prefix: apiKeys.prefix, createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt })
      .from(apiKeys)
      .where(eq(apiKeys.userId, userId))
      .orderBy(desc(apiKeys.createdAt)),
    db.select({ day: creditDays.day, used: creditDays.used }).from(creditDays).where(eq(creditDays.userId, userId)).orderBy(desc(creditDays.day)),
    db
      .select({ at: usageEvents.at, model: usageEvents.model, contextId: usageEvents.contextId, messageId: usageEvents.messageId, credits: usageEvents.credits })
      .from(usageEvents)
      .where(and(eq(usageEvents.userId, userId), eq(usageEvents.kind, "message"), eq(usageEvents.outcome, "ok")))
      .orderBy(desc(usageEvents.at), desc(usageEvents.id)),
  ]);
  const messagesOf = byContext(messageRows);
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: iso(now),
    ...(profile ? { profile: exportedProfile(profile) } : {}),
    groups: groupRows.map((g) => ({ id: g.id, name: g.name, createdAt: iso(g.createdAt) })),
    contexts: contextRows.map((c) => exportedContext(c, messagesOf.get(c.id) ?? [])),
    shares: shareRows.map((s) => ({ token: s.token, contextId: s.contextId, createdAt: iso(s.createdAt), expiresAt: s.expiresAt && iso(s.expiresAt) })),
    apiKeys: keyRows.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: iso(k.createdAt), lastUsedAt: k.lastUsedAt && iso(k.lastUsedAt) })),
    usage: {
      days: dayRows,
      messages: usageRows.map((u) => ({ at: iso(u.at), model: u.model, contextId: u.contextId, messageId: u.messageId, credits: u.credits })),
    },
  };
}

/**
 * The context's active branch as a Markdown document: its name as the title, its
 * instructions, then each message under who wrote it. For reading; the JSON export is the
 * one to import. One round trip.
 */
export async function exportMarkdown(db: Db, userId: string, contextId: string): Promise<{ name: string; markdown: string }> {
  const [found] = await db
    .select({ instructions: contexts.instructions })
    .from(contexts)
    .where(and(eq(contexts.id, contextId), eq(contexts.userId, userId)));
  const branch = found ? await readActiveBranch(db, userId, contextId) : null;
  if (!found || !branch) throw new ContextNotFound(contextId);
  const parts = [`# ${oneLine(branch.name)}`];
  if (found.instructions) parts.push(`> **Instructions**\n>\n${quote(found.instructions)}`);
  for (const m of branch.messages) {
    const who = m.role === "user" ? "You" : `Assistant${m.model ? ` (${m.model})` : ""}`;
    parts.push(`## ${who}, ${m.createdAt.slice(0, 16).replace("T", " ")} UTC\n\n${m.content}`);
  }
  return { name: branch.name, markdown: `${parts.join("\n\n")}\n` };
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();
const quote = (text: string) =>
  text
    .split("\n")
    .map((line) => (line ? `> ${line}` : ">"))
    .join("\n");

/** The profile as exported: what the person set and how they sign in (not their role here). */
function exportedProfile({ role: _role, ...profile }: Profile): NonNullable<ExportDocument["profile"]> {
  return { ...profile, createdAt: iso(profile.createdAt) };
}
