// Loaded only when a reply holds a code block (a dynamic import of this file), so the chat's
// first load does not carry highlight.js and its languages.
import hljs from "highlight.js/lib/common";

/** Past this many characters a block is shown plain: guessing a language costs too much. */
const AUTO_DETECT_LIMIT = 20_000;

/**
 * A code block's text as HTML: spans with `hljs-*` classes around escaped text (highlight.js
 * escapes it), or null when the language is unknown (the caller shows it plain). Without a
 * language, the common ones are tried.
 */
export function highlightCode(code: string, language: string | undefined): string | null {
  if (language) {
    if (!hljs.getLanguage(language)) return null;
    return hljs.highlight(code, { language, ignoreIllegals: true }).value;
  }
  if (code.length > AUTO_DETECT_LIMIT) return null;
  const guess = hljs.highlightAuto(code);
  // A weak guess paints prose-like text in random colours: better plain.
  return guess.relevance >= 5 ? guess.value : null;
}
