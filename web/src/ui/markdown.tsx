import DOMPurify from "dompurify";
import { marked } from "marked";
import { useMemo } from "preact/hooks";

// Every link a model writes opens in a new tab without handing over this page; DOMPurify
// has already removed scripts, event handlers and javascript: URLs by the time this runs.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Markdown (a model's reply, a shared snapshot) as sanitised HTML. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  return DOMPurify.sanitize(html, { FORBID_TAGS: ["style", "form", "input", "button", "iframe"], FORBID_ATTR: ["style"] });
}

export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

/** A search snippet: the server marks matched words as **bold**; everything else is text. */
export function Snippet({ text }: { text: string }) {
  const parts = text.split(/\*\*(.+?)\*\*/g);
  return <span>{parts.map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}</span>;
}
