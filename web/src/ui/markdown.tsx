import DOMPurify, { type Config } from "dompurify";
import { useEffect, useMemo, useState } from "preact/hooks";
import { isLoaded, isPrepared, listeners, load, markdownHtml, tooDeepToRender, type Extra } from "./markdown-html";
import { plainText } from "./plain-text";

// Every link a model writes opens in a new tab without handing over this page; DOMPurify
// has already removed scripts, event handlers and javascript: URLs by the time this runs.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const SANITIZE: Config & { RETURN_DOM_FRAGMENT: true } = {
  // HTML and MathML (KaTeX's output); no SVG: its <image>, <feImage> and <use> fetch URLs.
  USE_PROFILES: { html: true, mathMl: true },
  FORBID_TAGS: ["style", "form", "input", "button", "iframe", "video", "audio", "source", "track", "picture", "object", "embed", "link", "meta"],
  // Attributes that make the browser fetch something by itself (or style the page).
  FORBID_ATTR: ["style", "background", "srcset", "poster", "ping", "lowsrc", "dynsrc"],
  RETURN_DOM_FRAGMENT: true,
};

/**
 * An image in a reply becomes a link naming its host, opened only when the person clicks:
 * loading it by itself would hand whatever its URL carries (a prompt-injected model can put
 * the conversation there) to a host nobody chose. Images inside the text (data: URLs) fetch
 * nothing and stay.
 */
function imageAsLink(img: HTMLImageElement) {
  const src = img.getAttribute("src") ?? "";
  if (/^data:image\/(?:png|jpe?g|gif|webp);/i.test(src)) return;
  const doc = img.ownerDocument;
  const alt = img.getAttribute("alt")?.trim();
  let url: URL | null = null;
  try {
    url = new URL(src, location.href);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) {
    img.replaceWith(doc.createTextNode(alt ? `[image: ${alt}]` : "[image]"));
    return;
  }
  const link = doc.createElement("a");
  link.href = url.href;
  link.target = "_blank";
  link.rel = "noopener noreferrer";
  link.className = "image-link";
  link.title = url.href;
  link.append(alt ? `Image “${alt}” on ` : "Image on ");
  const host = doc.createElement("strong");
  host.textContent = url.host;
  link.append(host, " ↗");
  const hint = doc.createElement("span");
  hint.className = "visually-hidden";
  hint.textContent = " (opens in a new tab)";
  link.append(hint);
  img.replaceWith(link);
}

/** Code blocks get a header with their language and a copy button (markup of ours, after sanitising). */
function addCodeHeader(pre: HTMLPreElement) {
  const code = pre.firstElementChild;
  if (code?.tagName !== "CODE" || pre.classList.contains("math-pending")) return;
  const doc = pre.ownerDocument;
  const block = doc.createElement("div");
  block.className = "code-block";
  const head = doc.createElement("div");
  head.className = "code-head";
  const language = doc.createElement("span");
  language.textContent = /language-([\w+#-]+)/.exec(code.className)?.[1] ?? "code";
  const copy = doc.createElement("button");
  copy.type = "button";
  copy.className = "code-copy";
  copy.setAttribute("aria-label", "Copy code");
  copy.textContent = "Copy";
  head.append(language, copy);
  pre.replaceWith(block);
  block.append(head, pre);
}

/**
 * Markdown (a model's reply, a shared snapshot) as sanitised HTML, and what it still needs
 * loaded to look its best (highlighting, math); rendered again once those arrive.
 */
/** What a text prepared ahead (prepare.ts) rendered to, until its HTML changes: shown without doing it again. */
const kept = new Map<string, { from: string; result: { html: string; needs: Extra[] } }>();

export function renderMarkdown(text: string): { html: string; needs: Extra[] } {
  const { html, needs } = markdownHtml(text);
  const before = kept.get(text);
  if (before?.from === html) return before.result;
  // Sanitised into a document of DOMPurify's own, which loads nothing: the images become
  // links there, before this HTML reaches the page.
  const fragment = DOMPurify.sanitize(html, SANITIZE);
  fragment.querySelectorAll("img").forEach(imageAsLink);
  fragment.querySelectorAll("pre").forEach(addCodeHeader);
  const holder = fragment.ownerDocument!.createElement("div");
  holder.append(fragment);
  const result = { html: holder.innerHTML, needs };
  if (isPrepared(text)) {
    kept.set(text, { from: html, result });
    if (kept.size > 400) kept.delete(kept.keys().next().value!);
  }
  return result;
}

// ---------------------------------------------------------------------------------------
// A message that cannot be rendered never blanks the page. A reply or an imported message may
// be made to break the renderer: `> ` two thousand times, a run of ten thousand `*`, a list
// nested three thousand deep overflow marked's stack or take it minutes. Such a message is
// shown as plain text, alone, with a line saying why, and every other message renders as
// usual; what is too deep to try is told before trying (the renderer is synchronous: a tab
// it takes minutes over is frozen). A very long message is shown in parts.
// ---------------------------------------------------------------------------------------

/** A message longer than this is shown in parts of about this many characters, one more at each click. */
export const PART_CHARS = 20_000;

/** `text` in parts of at most PART_CHARS, cut at a line's end where one is near (never inside a surrogate pair). */
export function messageParts(text: string): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > PART_CHARS) {
    let cut = rest.lastIndexOf("\n", PART_CHARS);
    if (cut < PART_CHARS / 2) cut = PART_CHARS;
    if (/[\uD800-\uDBFF]/.test(rest[cut - 1] ?? "")) cut--;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  parts.push(rest);
  return parts;
}

type Rendered = { html: string; needs: Extra[] } | { failed: string };

/** The text rendered, or why it is shown as plain text instead. */
function renderOrWhy(text: string): Rendered {
  if (tooDeepToRender(text)) return { failed: "Shown as plain text: its formatting is nested too deeply to display." };
  try {
    return renderMarkdown(text);
  } catch {
    return { failed: "Shown as plain text: its formatting could not be displayed." };
  }
}

/**
 * Markdown (a model's reply, a shared snapshot). A long text comes in parts (PART_CHARS): the
 * first, then one more at each press of "Show more".
 */
export function Markdown({ text }: { text: string }) {
  const parts = useMemo(() => messageParts(text), [text]);
  const [shown, setShown] = useState(1);
  if (parts.length === 1) return <MarkdownPart text={text} />;
  const left = parts.slice(shown).reduce((sum, part) => sum + part.length, 0);
  return (
    <div class="markdown-parts">
      {parts.slice(0, shown).map((part, i) => (
        <MarkdownPart key={i} text={part} />
      ))}
      {left > 0 && (
        <button type="button" class="button small" onClick={() => setShown((n) => n + 1)}>
          Show more ({left.toLocaleString()} characters left)
        </button>
      )}
    </div>
  );
}

function MarkdownPart({ text }: { text: string }) {
  const [loaded, setLoaded] = useState(0);
  const rendered = useMemo(() => renderOrWhy(text), [text, loaded]);
  const needs = "needs" in rendered ? rendered.needs : [];
  useEffect(() => {
    const listener = () => setLoaded((n) => n + 1);
    listeners.add(listener);
    // What the first render lacked may have arrived before this effect listened (a reply
    // mounted again as it is stored, while the math it asked for was loading).
    if (needs.some(isLoaded)) listener();
    return () => void listeners.delete(listener);
  }, []);
  useEffect(() => needs.forEach(load), [needs.join()]);
  if ("failed" in rendered) {
    return (
      <div class="markdown">
        <p class="muted">{rendered.failed}</p>
        <div class="as-text">{text}</div>
      </div>
    );
  }
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents lint/a11y/noStaticElementInteractions: one listener for the copy buttons inside, which are buttons and keep their own keys
    <div
      class="markdown"
      dangerouslySetInnerHTML={{ __html: rendered.html }}
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
 * A search snippet as text, with the searched words highlighted. The server marks hits as
 * **bold**, but a message's own Markdown bold looks the same, so the marks are dropped with
 * the rest of the Markdown and the words highlighted again here (as prefixes: the search
 * stems, so "water" also finds "watering").
 */
export function Snippet({ text, words }: { text: string; words: string[] }) {
  const plain = plainText(text);
  const terms = words.map((w) => w.replace(/[^\p{L}\p{N}]/gu, "")).filter(Boolean);
  if (terms.length === 0) return <span>{plain}</span>;
  const pattern = new RegExp(`(${terms.map((t) => `${t}[\\p{L}\\p{N}]*`).join("|")})`, "giu");
  const parts = plain.split(pattern);
  return <span>{parts.map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}</span>;
}
