import { DomainError, excerpt } from "../../platform/errors";
import type { NameSource } from "./contexts";

// ---------------------------------------------------------------------------------------
// What an imported file becomes before anything is written (contexts whose messages point
// at their parents by key), the limits it must keep, and the checks both formats share.
// ---------------------------------------------------------------------------------------

/** The most a file may hold. */
export const IMPORT_LIMITS = {
  bytes: 10 * 1024 * 1024,
  contexts: 1000,
  messages: 50_000,
  /** Characters in one message. */
  content: 100_000,
};

/** What a file is, once read: contexts whose messages point at their parents by key. */
export interface ImportedMessage {
  /** Unique within its context: the id in the file. */
  key: string;
  parentKey: string | null;
  role: "user" | "assistant";
  content: string;
  model: string | null;
  createdAt: number;
  /** Files an export carried (`attachments` with base64 `data`), uploaded before the import's batch. */
  files?: Array<{ name: string; bytes: Uint8Array }>;
  /** The attachments those files became, linked to the message by the import's batch. */
  attachmentIds?: string[];
}

export interface ImportedContext {
  name: string;
  nameSource: NameSource;
  groupName: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  createdAt: number;
  /** When it was last updated in the file: imported contexts keep this order among themselves. */
  updatedAt: number;
  leafKey: string | null;
  messages: ImportedMessage[];
  /** Its id in the file, when it has one: a context imported (or made) here with that id is not imported again. */
  sourceId: string | null;
}

/**
 * The times a file may hold: from 2000 to a hundred years from now. Anything else is a
 * mistake (seconds taken for milliseconds, a corrupted number), and outside what a date
 * can show, it would break every page that shows the message.
 */
export const EARLIEST_TIME_MS = Date.UTC(2000, 0, 1);
const CENTURY_MS = 100 * 365.25 * 86_400_000;

/** `ms` if it is a sane time at `now`; else ImportInvalid at `path`, saying what a time must be. */
export function saneTime(ms: number, path: string, now: number, unit: string): number {
  const latest = now + CENTURY_MS;
  if (!Number.isFinite(ms) || ms < EARLIEST_TIME_MS || ms > latest) {
    throw new ImportInvalid(path, `must be a time between 2000-01-01 and ${new Date(latest).toISOString().slice(0, 10)} (${unit})`);
  }
  return Math.round(ms);
}

/** The file cannot be imported; the message says where and why. */
export class ImportInvalid extends DomainError {
  constructor(path: string, problem: string) {
    super("import_invalid", `cannot import this file: ${path ? `${path}: ` : ""}${problem}; nothing was imported`);
  }
}

/** `contexts[2].messages[0].parentId`, `[3].mapping["a-b"].parent`: where a value sits, as it reads in the file. */
export function at(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}["${excerpt(key).replace(/["\\]/g, "\\$&")}"]`;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Text as it will be stored: NUL becomes U+FFFD (the driver would read the text back cut
 * there) and unpaired surrogates too, as a model's reply is treated.
 */
export function storable(text: string): string {
  return text.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

/** A context name from a file: one line, trimmed, at most 200 characters; `fallback` when empty. */
export function importedName(name: string | null | undefined, fallback: string): string {
  const line = storable(name ?? "").replace(/\s+/g, " ").trim();
  const chars = Array.from(line || fallback);
  return chars.length > 200 ? `${chars.slice(0, 199).join("").trimEnd()}…` : chars.join("");
}

/** Throws ImportInvalid when a message's text is over the limit. */
export function checkContent(text: string, path: string): string {
  const length = Array.from(text).length;
  if (length > IMPORT_LIMITS.content) throw new ImportInvalid(path, `is ${length} characters, more than the ${IMPORT_LIMITS.content} a message may hold`);
  return storable(text);
}

/** Refuses a tree whose parents loop; the messages' keys are unique and their parents exist. */
export function checkAcyclic(parents: Map<string, string | null>, path: (key: string) => string): void {
  const done = new Set<string>();
  for (const start of parents.keys()) {
    const seen = new Set<string>();
    for (let key: string | null = start; key !== null && !done.has(key); key = parents.get(key) ?? null) {
      if (seen.has(key)) throw new ImportInvalid(path(key), "its parents lead back to itself");
      seen.add(key);
    }
    for (const key of seen) done.add(key);
  }
}

