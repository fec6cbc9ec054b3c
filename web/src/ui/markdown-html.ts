import type { Marked, TokenizerAndRendererExtension, Tokens } from "marked";

// Markdown to HTML, as text: marked with the math delimiters models use, code blocks
// highlighted and formulas typeset once those are loaded. Nothing here touches a document,
// so it runs in the page (markdown.tsx sanitises what it makes) and in a worker
// (prepare-worker.ts), which renders the replies a page opens with off its main thread:
// marked's first use, highlight.js and KaTeX cost a phone's main thread seconds.

// Highlighting and math are loaded the first time a reply needs them (dynamic imports, each
// its own file in the build), so the chat's first load carries neither.
export interface Extras {
  /** undefined: that block's language is not loaded yet (see code-highlight.ts). */
  highlightCode?: (code: string, language: string | undefined) => string | null | undefined;
  renderMath?: (tex: string, display: boolean) => string;
}
/** marked itself ("markdown") is one too: a page whose replies the worker renders never loads it. */
export type Extra = "markdown" | "code" | "math";
export const extras: Extras = {};
const loading: Partial<Record<Extra, Promise<void>>> = {};
export const listeners = new Set<() => void>();
/** The languages code blocks asked for that are not loaded yet ("" for a block to guess). */
const wantedLanguages = new Set<string>();

/** Loads an extra (once; for code, the languages asked for so far), then tells the listeners; resolves either way. */
export function load(extra: Extra): Promise<void> {
  return (loading[extra] ??= (
    extra === "markdown"
      ? import("marked").then((m) => void (marked = configure(new m.Marked())))
      : extra === "code"
        ? import("./code-highlight").then(async (m) => {
            const languages = [...wantedLanguages];
            wantedLanguages.clear();
            await m.loadLanguages(languages);
            extras.highlightCode = m.highlightCode;
            // Another reply may name another language: code is loaded again for it.
            delete loading.code;
          })
        : import("./math").then((m) => void (extras.renderMath = m.renderMath))
  ).then(
    () => {
      for (const listener of listeners) listener();
    },
    // Offline or a new deployment: replies stay readable, plain; the next reply tries again.
    () => void delete loading[extra],
  ));
}

/** Whether an extra is there (for code: highlight.js, whichever languages it has so far). */
export const isLoaded = (extra: Extra) => (extra === "markdown" ? !!marked : extra === "code" ? !!extras.highlightCode : !!extras.renderMath);

/** Past these the renderer's recursion (quotes, lists) or its emphasis matching gets too deep or too slow. */
const MAX_QUOTE_DEPTH = 64;
const MAX_INDENT = 128;
const MAX_MARK_RUN = 256;

/** Whether the renderer would go too deep in `text`: nested quotes or lists, or a long run of emphasis marks. */
export function tooDeepToRender(text: string): boolean {
  if (new RegExp(`[*_~\\[\\]]{${MAX_MARK_RUN},}`).test(text)) return true;
  for (const line of text.split("\n")) {
    const indent = /^[ \t]*/.exec(line)![0].replace(/\t/g, "    ").length;
    if (indent > MAX_INDENT) return true;
    const quotes = /^[ \t>]*/.exec(line)![0].split(">").length - 1;
    if (quotes > MAX_QUOTE_DEPTH) return true;
  }
  return false;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/**
 * Math in the delimiters models use: `$…$` and `\(…\)` inline, `$$…$$` and `\[…\]` as a
 * block. An inline `$` must hug its formula and not be followed by a digit, so prices
 * ("$5 and $10") stay text.
 */
const INLINE_MATH = [/^\$\$(?!\s)([^$]+?)\$\$/, /^\$(?![\s$])((?:\\.|[^\\$\n])+?)(?<![\s\\])\$(?!\d)/, /^\\\(([\s\S]+?)\\\)/];
const BLOCK_MATH = [/^ {0,3}\$\$([\s\S]+?)\$\$[ \t]*(?:\n+|$)/, /^ {0,3}\\\[([\s\S]+?)\\\][ \t]*(?:\n+|$)/];

/** What the text being rendered still needs loaded; rendering is synchronous, one text at a time. */
let needs = new Set<Extra>();

function mathExtension(level: "inline" | "block", patterns: RegExp[]): TokenizerAndRendererExtension {
  return {
    name: `${level}Math`,
    level,
    start: (src: string) => {
      const at = src.search(level === "inline" ? /\$|\\\(/ : /^ {0,3}(?:\$\$|\\\[)/m);
      return at < 0 ? undefined : at;
    },
    tokenizer(src: string) {
      for (const pattern of patterns) {
        const match = pattern.exec(src);
        if (match) return { type: `${level}Math`, raw: match[0], text: match[1]!.trim(), display: level === "block" || match[0].startsWith("$$") };
      }
      return undefined;
    },
    renderer(token) {
      const { text, display } = token as unknown as { text: string; display: boolean };
      if (extras.renderMath) return extras.renderMath(text, display);
      needs.add("math");
      // Until KaTeX arrives, the formula's source.
      return display ? `<pre class="math-pending"><code>${escapeHtml(text)}</code></pre>` : `<code class="math-pending">${escapeHtml(text)}</code>`;
    },
  };
}

let marked: Marked | undefined;

/** The page's Markdown: GFM, a line break for each newline, math, code blocks highlighted. */
const configure = (instance: Marked) =>
  instance.use({
    gfm: true,
    breaks: true,
    extensions: [mathExtension("block", BLOCK_MATH), mathExtension("inline", INLINE_MATH)],
    renderer: {
      code({ text, lang }: Tokens.Code) {
        const language = lang?.match(/^[\w+#-]+/)?.[0]?.toLowerCase();
        // Like marked's own: the block ends in one newline, which Copy copies too.
        const code = `${text.replace(/\n$/, "")}\n`;
        const body = extras.highlightCode?.(code, language);
        if (body === undefined) {
          needs.add("code");
          wantedLanguages.add(language ?? "");
        }
        return `<pre><code${language ? ` class="language-${escapeHtml(language)}"` : ""}>${body ?? escapeHtml(code)}</code></pre>\n`;
      },
    },
  });

/**
 * HTML prepared elsewhere (prepare-worker.ts), by text: what the same pipeline makes with
 * every extra it needs loaded, so the page only sanitises it. A few hundred at most.
 */
const prepared = new Map<string, string>();
const PREPARED_MAX = 400;

export function rememberPrepared(text: string, html: string): void {
  prepared.delete(text);
  prepared.set(text, html);
  if (prepared.size > PREPARED_MAX) prepared.delete(prepared.keys().next().value!);
}

export const isPrepared = (text: string) => prepared.has(text);

const plainParagraphs = (text: string) =>
  text
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, "<br>")}</p>`)
    .join("\n");

/** A text's HTML (not sanitised yet), and the extras it still needs to look its best. */
export function markdownHtml(text: string): { html: string; needs: Extra[] } {
  const ready = prepared.get(text);
  if (ready !== undefined) return { html: ready, needs: [] };
  // Until marked arrives (loaded when first needed: its first use is costly), the text as
  // plain paragraphs.
  if (!marked) return { html: plainParagraphs(text), needs: ["markdown"] };
  needs = new Set<Extra>();
  const html = marked.parse(text, { async: false });
  return { html, needs: [...needs].sort() };
}
