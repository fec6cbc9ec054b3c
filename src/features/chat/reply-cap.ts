// The longest reply the service stores (MAX_REPLY_CHARS): a model that runs on, or one made
// to write megabytes (a reply is shown to a person, shared, exported, searched), stops
// there, with a note in the reply that says so. The reply is charged once, as any reply.

/** What ends a reply cut at the cap: visible to whoever reads it, in the text itself. */
export const cutNote = (max: number) =>
  `\n\n[This reply was cut here: it reached the longest reply this service keeps, ${max.toLocaleString("en-US")} characters.]`;

/** Characters as text lengths count them everywhere in the API: Unicode code points. */
const codePoints = (text: string) => text.length - (text.match(/[\uD800-\uDBFF](?=[\uDC00-\uDFFF])/g)?.length ?? 0);

/** The first `n` code points of `text`, never half a surrogate pair. */
function firstCodePoints(text: string, n: number): string {
  let i = 0;
  for (let k = 0; k < n && i < text.length; k++) {
    const high = text.charCodeAt(i) >= 0xd800 && text.charCodeAt(i) <= 0xdbff;
    const low = i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff;
    i += high && low ? 2 : 1;
  }
  return text.slice(0, i);
}

/**
 * Counts a reply's text as it comes, piece by piece: `take` passes what fits under `max`
 * characters and, at the cap, the note; after that nothing (`cut` is then true, and the
 * caller stops the model).
 */
export function replyCap(max: number) {
  let count = 0;
  let cut = false;
  return {
    take(text: string): string {
      if (cut) return "";
      const length = codePoints(text);
      if (count + length <= max) {
        count += length;
        return text;
      }
      cut = true;
      const fits = firstCodePoints(text, max - count);
      count = max;
      return fits + cutNote(max);
    },
    get cut() {
      return cut;
    },
  };
}
