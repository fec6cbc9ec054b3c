// Loaded only when a reply holds math (a dynamic import of this file): KaTeX is larger than
// the rest of the chat page together.
import katex from "katex";

/**
 * TeX as MathML, which the browser lays out itself: KaTeX's HTML output needs inline styles
 * (the CSP forbids them) and its fonts. `trust: false` keeps \href, \includegraphics and the
 * like as red text rather than links or images; a formula that does not parse shows as its
 * source. The result still goes through the sanitiser with the rest of the reply.
 */
export function renderMath(tex: string, display: boolean): string {
  return katex
    .renderToString(tex, { displayMode: display, output: "mathml", throwOnError: false, trust: false, strict: "ignore", maxExpand: 500, maxSize: 20 })
    // The TeX source rides along as an annotation, which the sanitiser would turn into text.
    .replace(/<annotation\b[^>]*>[\s\S]*?<\/annotation>/g, "")
    .replace(/<\/?semantics>/g, "");
}
