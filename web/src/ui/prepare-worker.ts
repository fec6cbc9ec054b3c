// What a page shows that costs its main thread most, made off it: the replies a conversation
// or a shared page opens with (marked, then highlight.js and KaTeX as they need them; the page
// only sanitises the HTML), and dates in the reader's own format (a browser's first date
// format loads its locale data: 60 ms here, four times that on a phone). See prepare.ts.
// Each text is answered once with what can be made now and, when it needed an extra that was
// still loading, again with it.
import { load, markdownHtml, tooDeepToRender } from "./markdown-html";
import { formatDateTime } from "./time";

export type PrepareRequest = { id: number; text: string } | { id: number; dates: string[] };

export type PrepareReply =
  | {
      id: number;
      /** Not set when the text could not be rendered: the page renders it itself. */
      html?: string;
      /** Whether every extra the text needs was there. */
      complete: boolean;
    }
  | { id: number; formatted: string[] };

const answer = (reply: PrepareReply) => postMessage(reply);

const ready = load("markdown");

addEventListener("message", (event: MessageEvent<PrepareRequest>) => {
  const request = event.data;
  if ("dates" in request) return answer({ id: request.id, formatted: request.dates.map(formatDateTime) });
  void ready.then(() => prepare(request));
});

function tryRender(text: string) {
  // Too deep for the renderer (see markdown.tsx): the page says so and shows it as text.
  if (tooDeepToRender(text)) return null;
  try {
    return markdownHtml(text);
  } catch {
    return null;
  }
}

async function prepare({ id, text }: { id: number; text: string }) {
  let result = tryRender(text);
  if (!result) return answer({ id, complete: true });
  if (result.needs.length === 0) return answer({ id, html: result.html, complete: true });
  answer({ id, html: result.html, complete: false });
  // What it needs, loaded; again if it then needs more (a language asked for meanwhile by another text).
  for (let tries = 0; tries < 3 && result.needs.length > 0; tries++) {
    await Promise.all(result.needs.map(load));
    const next = tryRender(text);
    if (!next) return;
    result = next;
  }
  // Still short of an extra (offline): the page keeps what it was answered.
  if (result.needs.length === 0) answer({ id, html: result.html, complete: true });
}
