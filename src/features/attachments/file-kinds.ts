import { fileTypeFromBuffer } from "file-type/core";
import type { PdfjsLoader } from "../../platform/deps";
import { DomainError, excerpt } from "../../platform/errors";

// ---------------------------------------------------------------------------------------
// What an uploaded file is, read from its bytes (never from the client's Content-Type or
// the name's extension, which only picks among text types): an image a model can be shown
// (PNG, JPEG, WebP, GIF), a PDF, or UTF-8 text (plain, Markdown, CSV, JSON, source code).
// SVG is refused: it is a program a browser runs, not a picture to pass on. A document's
// text is what the model is sent; a PDF's is extracted with unpdf (pdf.js), which runs on
// Node and on Workers.
// ---------------------------------------------------------------------------------------

export type AttachmentKind = "image" | "document";

export interface Sniffed {
  kind: AttachmentKind;
  /** The media type the file is stored and served as. */
  type: string;
}

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"]);
const ACCEPTED = "PNG, JPEG, WebP or GIF images; PDF, text, Markdown, CSV, JSON or source code documents";

/** The file's type is not one the service takes (SVG, a binary, text that is not UTF-8). */
export class AttachmentTypeRefused extends DomainError {
  constructor(name: string, what: string) {
    super("attachment_type", `${excerpt(name)} is ${what}: attach ${ACCEPTED}`, { field: "file" });
  }
}

/** The document has no text a model could read (a scanned PDF without a text layer). */
export class DocumentWithoutText extends DomainError {
  constructor(name: string, why: string) {
    super("document_without_text", `${excerpt(name)} ${why}: attach a PDF with a text layer (run OCR on a scan first), or paste its text`, { field: "file" });
  }
}

/** What the file is, from its bytes; refuses what the service does not take. */
export async function sniff(bytes: Uint8Array, name: string): Promise<Sniffed> {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 4096));
  if (/^(\u00ef\u00bb\u00bf)?\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<svg[\s>]/i.test(head)) throw new AttachmentTypeRefused(name, "an SVG image (a program a browser runs, which is not taken)");
  const found = await fileTypeFromBuffer(bytes);
  if (found) {
    if (IMAGE_TYPES.has(found.mime)) return { kind: "image", type: found.mime };
    if (found.mime === "application/pdf") return { kind: "document", type: "application/pdf" };
    throw new AttachmentTypeRefused(name, `a file of type ${found.mime}`);
  }
  const text = utf8(bytes);
  if (text === undefined) throw new AttachmentTypeRefused(name, "neither an image nor UTF-8 text");
  return { kind: "document", type: textTypeOf(name) };
}

/** C0 controls other than tab, line feed, vertical tab, form feed, carriage return and escape. */
const BINARY_CONTROLS = new Set([...Array(32).keys()].filter((c) => ![9, 10, 11, 12, 13, 27].includes(c)));

/** The bytes as UTF-8 text (without a byte order mark), or undefined when they are not text. */
export function utf8(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
  // NUL and most C0 controls do not occur in text files; they mark a binary the sniffer does not know.
  for (let i = 0; i < text.length; i++) if (BINARY_CONTROLS.has(text.charCodeAt(i))) return undefined;
  return text;
}

/** Among text types, the one the name says; source code and anything else is text/plain. */
function textTypeOf(name: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  if (ext === "md" || ext === "markdown") return "text/markdown";
  if (ext === "csv") return "text/csv";
  if (ext === "json") return "application/json";
  return "text/plain";
}

/** A document's text, and a PDF's page count; `pdfjs` loads pdf.js where the runtime keeps it apart (the Worker). */
export async function documentText(bytes: Uint8Array, type: string, name: string, pdfjs?: PdfjsLoader): Promise<{ text: string; pages?: number }> {
  if (type !== "application/pdf") return { text: utf8(bytes) ?? "" };
  const { extractText, getDocumentProxy } = await unpdf(pdfjs);
  let pages: number;
  let text: string;
  try {
    // pdf.js may take the buffer over (detach it): it gets a copy, the caller keeps its bytes.
    const pdf = await getDocumentProxy(bytes.slice());
    ({ totalPages: pages, text } = await extractText(pdf, { mergePages: true }));
    await pdf.destroy();
  } catch {
    throw new DocumentWithoutText(name, "could not be read as a PDF (damaged, or protected by a password)");
  }
  if (!/\S/.test(text)) throw new DocumentWithoutText(name, `has no text layer (${pages} page${pages === 1 ? "" : "s"} of images only)`);
  return { text, pages };
}

let pdfjsDefined: Promise<void> | undefined;

/**
 * unpdf, loaded on first use (pdf.js is most of the code an upload runs), with the
 * runtime's pdf.js when it hands one in: defined once, when the first PDF comes, so that
 * an isolate that never sees a PDF never loads it.
 */
async function unpdf(pdfjs: PdfjsLoader | undefined) {
  const module = await import("unpdf");
  if (pdfjs) {
    pdfjsDefined ??= module.definePDFJSModule(pdfjs).catch((err) => {
      pdfjsDefined = undefined;
      throw err;
    });
    await pdfjsDefined;
  }
  return module;
}
