import { Buffer } from "node:buffer";
import { eq } from "drizzle-orm";
import type { Db } from "../../platform/db";
import { textOf, type ChatMessage, type ContentPart } from "../../platform/models/adapter";
import { estimateTokens, messageTokens } from "../../platform/models/tokens";
import { users } from "../../../schema/index";
import { AttachmentNotFound, bytesOf, ownAttachments, type AttachmentDeps, type AttachmentRow } from "./attachments";

// ---------------------------------------------------------------------------------------
// What a model is sent of attachments, built at send time from the stored rows and bytes:
// an image as an image part (a data: URL, which each adapter turns into its provider's
// shape) for a model that takes images, else a line saying one was there; a document as a
// labelled block of its text, as much as fits the model's window, with a note where it was
// cut. The chat path calls two functions: sendableAttachments before it charges (so a
// refusal costs nothing) and withAttachments once it has the prompt.
// ---------------------------------------------------------------------------------------

/** What an image is estimated to cost in a prompt: providers count roughly a thousand tokens for a picture. */
const IMAGE_TOKENS = 1000;

export interface SendableAttachments {
  rows: AttachmentRow[];
  images: boolean;
  /** The sender's default model (preferences), for the check of images when the request names none. */
  defaultModel: string | undefined;
}

/**
 * The sender's attachments a message names, in its order: a 404 for one that is not
 * theirs, before anything is charged. One round trip, which a message without attachments never makes.
 */
export async function sendableAttachments(db: Db, userId: string, ids: string[]): Promise<SendableAttachments> {
  const unique = [...new Set(ids)];
  const [found, prefs] = await Promise.all([
    ownAttachments(db, userId, unique),
    db.select({ preferences: users.preferences }).from(users).where(eq(users.id, userId)),
  ]);
  const rows = unique.map((id, i) => {
    const row = found.get(id);
    if (!row) throw new AttachmentNotFound(id, `attachments[${i}]`);
    return row;
  });
  return { rows, images: rows.some((r) => r.kind === "image"), defaultModel: prefs[0]?.preferences?.defaultModel };
}

export interface PromptAttachments {
  /** The prompt as built from text: instructions, history (oldest first), the message last. */
  prompt: ChatMessage[];
  /** The history in the prompt, newest first: prompt[prompt.length - 2 - k] is newestFirst[k]. */
  newestFirst: Array<{ attachments?: string | null }>;
  /** The new message's attachments (send), or the ids of the user message answered again (regenerate). */
  message: AttachmentRow[] | string | null | undefined;
  /** Whether the model (and every fallback) takes images. */
  images: boolean;
  /** The smallest window of the models that may answer, in tokens. */
  contextWindow: number;
}

/**
 * The prompt with each message's attachments in it, newest message first to the window:
 * documents cut to what room is left (`cut` names those), images as parts or a note.
 */
export async function withAttachments(deps: AttachmentDeps, userId: string, input: PromptAttachments): Promise<{ prompt: ChatMessage[]; cut: string[] }> {
  const { prompt, newestFirst } = input;
  const last = prompt.length - 1;
  // Which prompt message carries which ids: the message itself, then the history in it.
  const wanted: Array<{ at: number; ids: string[] }> = [];
  if (typeof input.message === "string") wanted.push({ at: last, ids: input.message.split(",") });
  const history = prompt.length - 1 - (prompt[0]?.role === "system" ? 1 : 0);
  for (let k = 0; k < Math.min(history, newestFirst.length); k++) {
    const ids = newestFirst[k]!.attachments;
    if (ids) wanted.push({ at: last - 1 - k, ids: ids.split(",") });
  }
  if (wanted.length === 0 && (!input.message || typeof input.message === "string")) return { prompt, cut: [] };
  const rows = await ownAttachments(deps.db, userId, wanted.flatMap((w) => w.ids));
  const carried = [...(Array.isArray(input.message) ? [{ at: last, rows: input.message }] : []), ...wanted.map((w) => ({ at: w.at, rows: w.ids.flatMap((id) => rows.get(id) ?? []) }))];
  const out = [...prompt];
  const cut: string[] = [];
  let room = input.contextWindow - Math.min(4096, Math.floor(input.contextWindow / 4)) - prompt.reduce((n, m) => n + messageTokens(textOf(m.content)), 0);
  for (const { at, rows: attached } of carried) {
    const parts: ContentPart[] = [{ type: "text", text: textOf(out[at]!.content) }];
    for (const row of attached) {
      if (row.kind === "image") {
        parts.push(input.images ? { type: "image", url: await dataUrl(deps, row) } : { type: "text", text: `[An image was attached here (${row.name}); this model does not take images.]` });
        room -= input.images ? IMAGE_TOKENS : 20;
        continue;
      }
      const block = documentBlock(row, room);
      if (block.cut) cut.push(row.id);
      room -= estimateTokens(block.text);
      parts.push({ type: "text", text: block.text });
    }
    out[at] = { ...out[at]!, content: parts };
  }
  return { prompt: out, cut };
}

async function dataUrl(deps: AttachmentDeps, row: AttachmentRow): Promise<string> {
  const bytes = await bytesOf(deps, row);
  return `data:${row.type};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}`;
}

/** A document's text in a labelled block, as much as `room` tokens take, with a note where it was cut. */
function documentBlock(row: AttachmentRow, room: number): { text: string; cut: boolean } {
  const whole = row.text ?? "";
  const total = row.chars ?? whole.length;
  const pages = row.pages ? ` pages="${row.pages}"` : "";
  const open = `<document name="${row.name.replace(/"/g, "'")}" type="${row.type}"${pages}>\n`;
  const close = "\n</document>";
  const note = (kept: number) => `\n[The document was cut here: the first ${kept} of its ${total} characters fit the model's context window.]`;
  const frame = estimateTokens(open + close + note(total)) + 8;
  // About 3 characters a token (tokens.ts), so that what is kept fits by the same estimate.
  const fits = Math.max(0, (room - frame) * 3);
  if (whole.length <= fits && whole.length === total) return { text: open + whole + close, cut: false };
  // Never half of a surrogate pair.
  const kept = whole.slice(0, Math.min(fits, whole.length)).replace(/[\uD800-\uDBFF]$/, "");
  return { text: open + kept + note(kept.length) + close, cut: true };
}
