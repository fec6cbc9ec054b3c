import { useEffect, useState } from "preact/hooks";
import { Icon } from "../ui/icons";
import { plainText } from "../ui/plain-text";

// A reply read aloud by the browser's own speech synthesis (the system's voices; nothing is
// sent anywhere for it). One reply at a time: starting another stops the first.

let reading: string | null = null;
const listeners = new Set<() => void>();
function setReading(id: string | null) {
  reading = id;
  for (const listener of listeners) listener();
}

const canSpeak = () => typeof speechSynthesis !== "undefined" && typeof SpeechSynthesisUtterance === "function";

/**
 * A reply as it is said, in pieces of a sentence or a few (some voices stop after a long
 * utterance): its words without Markdown; a code block or a display formula is named, not
 * spelled out symbol by symbol.
 */
export function speechParts(markdown: string): string[] {
  const said = plainText(
    markdown
      .replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^ {0,3}\1[^\n]*$|(?![\s\S]))/gm, "\n\n(A code block.)\n\n")
      .replace(/\$\$[\s\S]+?\$\$|\\\[[\s\S]+?\\\]/g, "\n\n(A formula.)\n\n")
      // Inline math reads as its letters: $r_1$ as "r 1".
      .replace(/\$(?![\s$\d])((?:\\.|[^\\$\n])+?)\$|\\\(([\s\S]+?)\\\)/g, (_, a: string | undefined, b: string | undefined) =>
        (a ?? b ?? "").replace(/\\[a-zA-Z]+/g, " ").replace(/[{}_^\\]/g, " "),
      ),
  );
  const sentences = said.match(/[^.!?…]+(?:[.!?…]+["”’)]*|$)\s*/g) ?? [said];
  const parts: string[] = [];
  for (const sentence of sentences) {
    const last = parts.length - 1;
    if (last >= 0 && parts[last]!.length + sentence.length <= 220) parts[last] += sentence;
    else parts.push(sentence);
  }
  return parts.map((p) => p.trim()).filter(Boolean);
}

function read(id: string, markdown: string, lang: string) {
  speechSynthesis.cancel();
  setReading(id);
  const parts = speechParts(markdown);
  // Stopped, interrupted by another reply, or done: this one is no longer being read.
  const over = () => reading === id && setReading(null);
  parts.forEach((part, i) => {
    const utterance = new SpeechSynthesisUtterance(part);
    if (lang) utterance.lang = lang;
    utterance.addEventListener("error", over);
    if (i === parts.length - 1) utterance.addEventListener("end", over);
    speechSynthesis.speak(utterance);
  });
  if (parts.length === 0) over();
}

function stop() {
  setReading(null);
  speechSynthesis.cancel();
}

/** "Read aloud" under a reply (in `language`, the profile's), "Stop reading" while it is read; absent where the browser cannot speak. */
export function ReadAloudButton({ id, text, language }: { id: string; text: string; language: string }) {
  const [active, setActive] = useState(reading === id);
  useEffect(() => {
    const listener = () => setActive(reading === id);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      // Leaving the conversation stops its reading.
      if (reading === id) stop();
    };
  }, [id]);
  if (!canSpeak()) return null;
  return (
    <button
      type="button"
      class="icon-button small"
      aria-label={active ? "Stop reading" : "Read aloud"}
      title={active ? "Stop reading" : "Read aloud"}
      onClick={() => (active ? stop() : read(id, text, language))}
    >
      <Icon name={active ? "stop" : "speaker"} size={16} />
    </button>
  );
}
