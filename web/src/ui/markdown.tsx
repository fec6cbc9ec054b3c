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
  const safe = DOMPurify.sanitize(html, { FORBID_TAGS: ["style", "form", "input", "button", "iframe"], FORBID_ATTR: ["style"] });
  // Code blocks get a header with their language and a copy button: markup of ours, added
  // after sanitising (the language is escaped by its own pattern: letters, digits, + - #).
  return safe
    .replace(/<pre><code(?: class="language-([\w+#-]+)")?>/g, (_m, lang?: string) =>
      `<div class="code-block"><div class="code-head"><span>${lang ?? "code"}</span>` +
      `<button type="button" class="code-copy" aria-label="Copy code">Copy</button></div><pre><code${lang ? ` class="language-${lang}"` : ""}>`,
    )
    .replace(/<\/code><\/pre>/g, "</code></pre></div>");
}

export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return (
    <div
      class="markdown"
      dangerouslySetInnerHTML={{ __html: html }}
      onClick={(e) => {
        const button = (e.target as Element).closest?.(".code-copy");
        const code = button?.closest(".code-block")?.querySelector("code");
        if (!button || !code) return;
        void navigator.clipboard?.writeText(code.textContent ?? "").then(() => {
          button.textContent = "Copied";
          setTimeout(() => (button.textContent = "Copy"), 1500);
        });
      }}
    />
  );
}

/**
 * A search snippet with the searched words highlighted. The server marks hits as **bold**,
 * but a message's own Markdown bold looks the same, so the marks are dropped and the words
 * highlighted again here (as prefixes: the search stems, so "water" also finds "watering").
 */
export function Snippet({ text, words }: { text: string; words: string[] }) {
  const plain = text.replace(/\*\*/g, "");
  const terms = words.map((w) => w.replace(/[^\p{L}\p{N}]/gu, "")).filter(Boolean);
  if (terms.length === 0) return <span>{plain}</span>;
  const pattern = new RegExp(`(${terms.map((t) => `${t}[\\p{L}\\p{N}]*`).join("|")})`, "giu");
  const parts = plain.split(pattern);
  return <span>{parts.map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}</span>;
}
