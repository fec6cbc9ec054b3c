import { useEffect, useState } from "preact/hooks";
import { renderMarkdown } from "./markdown";
import { isPrepared, listeners, rememberPrepared } from "./markdown-html";
import type { PrepareReply, PrepareRequest } from "./prepare-worker";
import { startPrepareWorker, workerFailedEarly } from "./prepare-worker-start";
import { isFormatted, rememberDateTime } from "./time";

// The page's side of prepare-worker.ts. A page hands it the replies (and dates) it opens with
// and shows them once they are ready: a Markdown of a prepared text then costs the main thread
// only its sanitising, done ahead one text a task, and a prepared date nothing. Without
// workers (or when the worker fails) everything is ready at once, and the page renders as it
// always did, by itself.

interface Waiting {
  /** What was asked: a text, or dates. */
  text?: string;
  dates?: string[];
  /** Resolves once the answer is in (for a text: with every extra it needs), or will not come. */
  done: () => void;
  /** A text's HTML answered before its extras arrived. */
  partial?: string;
}

let worker: Worker | null | undefined;
let nextId = 1;
const waiting = new Map<number, Waiting>();
const byText = new Map<string, Promise<void>>();
/** Texts shown with partial HTML (their extras took too long), by request id: their full HTML follows. */
const late = new Map<number, string>();

function theWorker(): Worker | null {
  if (worker !== undefined) return worker;
  const started = startPrepareWorker();
  // Failed before this listened (its script could not load): the page renders by itself.
  if (!started || workerFailedEarly()) return (worker = null);
  worker = started;
  worker.addEventListener("message", (event: MessageEvent<PrepareReply>) => received(event.data));
  worker.addEventListener("error", () => {
    worker = null;
    for (const [id, w] of waiting) {
      if (w.text !== undefined && w.partial !== undefined) rememberPrepared(w.text, w.partial);
      w.done();
      waiting.delete(id);
    }
    byText.clear();
  });
  return worker;
}

function received(reply: PrepareReply) {
  const w = waiting.get(reply.id);
  if ("formatted" in reply) {
    reply.formatted.forEach((text, i) => {
      rememberDateTime(w?.dates?.[i] ?? "", text);
    });
    waiting.delete(reply.id);
    return w?.done();
  }
  const { id, html, complete } = reply;
  if (!w) {
    // A text shown with its partial HTML now has its extras: the Markdowns render again.
    if (html !== undefined && complete && late.has(id)) {
      rememberPrepared(late.get(id)!, html);
      late.delete(id);
      for (const listener of listeners) listener();
    }
    return;
  }
  if (html !== undefined && !complete) {
    w.partial = html;
    return;
  }
  if (html !== undefined) rememberPrepared(w.text!, html);
  waiting.delete(id);
  byText.delete(w.text!);
  w.done();
}

/**
 * What replies hold, as the worker makes it: the sanitiser's first run costs several times its
 * later ones (its set-up, code not yet optimised), so it runs once on this while the page
 * waits for its data.
 */
const SAMPLE = "\u0000sample";
const SAMPLE_HTML =
  '<p>A <strong>sample</strong>, <em>with</em> <a href="https://example.com/">a link</a> and <code>code</code>.</p>' +
  '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>b</td></tr></tbody></table>' +
  '<pre><code class="language-js"><span class="hljs-keyword">const</span> x = <span class="hljs-number">1</span>;\n</code></pre>' +
  '<math display="block"><mrow><munderover><mo>∑</mo><mi>i</mi><mi>n</mi></munderover><msub><mi>w</mi><mi>i</mi></msub></mrow></math>';

let warmed = false;

/** Starts the worker (and its download) before there is anything to prepare, and readies the sanitiser. */
export function warmPreparer(): void {
  if (!theWorker() || warmed) return;
  warmed = true;
  void nextTask().then(() => {
    rememberPrepared(SAMPLE, SAMPLE_HTML);
    renderMarkdown(SAMPLE);
  });
}

function ask(w: Worker, request: Omit<Waiting, "done">): Promise<void> {
  const id = nextId++;
  const answered = new Promise<void>((done) => waiting.set(id, { ...request, done }));
  w.postMessage((request.text !== undefined ? { id, text: request.text } : { id, dates: request.dates! }) satisfies PrepareRequest);
  return answered;
}

/**
 * Resolves when every text has its HTML prepared (and sanitised), or after `patienceMs` with
 * what there is (a code block still plain, a formula as its source: they arrive later, and the
 * Markdown showing them renders again). Dates are formatted too.
 */
export function prepare(texts: string[], dates: string[] = [], patienceMs = 2500): Promise<void> {
  const w = theWorker();
  if (!w) return Promise.resolve();
  const pending = texts.filter((text) => !isPrepared(text));
  const each = pending.map((text) => {
    let ready = byText.get(text);
    if (!ready) byText.set(text, (ready = ask(w, { text })));
    return ready;
  });
  const unformatted = dates.filter((date) => !isFormatted(date));
  if (unformatted.length > 0) each.push(ask(w, { dates: unformatted }));
  if (each.length === 0) return Promise.resolve();
  const answered = new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      // Out of patience: show what the worker made so far; the rest follows when it comes.
      for (const [id, w] of waiting) {
        if (w.partial === undefined || w.text === undefined || !pending.includes(w.text)) continue;
        rememberPrepared(w.text, w.partial);
        late.set(id, w.text);
        waiting.delete(id);
        byText.delete(w.text);
        w.done();
      }
      resolve();
    }, patienceMs);
    void Promise.all(each).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  return answered.then(() => sanitiseAhead(pending));
}

/** A task of its own, after what is waiting (a MessageChannel's message: no timer clamping). */
const nextTask = () =>
  new Promise<void>((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });

/**
 * Sanitises the prepared texts one task each (renderMarkdown keeps the result), so that
 * showing them all at once costs the page no long task: a phone spends tens of
 * milliseconds on a reply with code and a formula.
 */
async function sanitiseAhead(texts: string[]) {
  for (const text of texts) {
    if (!isPrepared(text)) continue;
    await nextTask();
    renderMarkdown(text);
  }
  await nextTask();
}

/**
 * Whether the texts (and dates) are ready to show: prepared, or given up on (no worker, out of
 * patience), in which case the page renders them itself. Asks for them on first use.
 */
export function usePrepared(texts: string[], dates: string[] = []): boolean {
  const missing = texts.filter((text) => !isPrepared(text));
  const unformatted = dates.filter((date) => !isFormatted(date));
  const [gaveUp, setGaveUp] = useState<string[] | null>(null);
  const key = `${missing.length}:${missing[0]?.length ?? 0}:${missing.at(-1)?.slice(0, 64) ?? ""}:${unformatted.join()}`;
  useEffect(() => {
    if (missing.length === 0 && unformatted.length === 0) return;
    let current = true;
    void prepare(missing, unformatted).then(() => current && setGaveUp(missing));
    return () => void (current = false);
  }, [key]);
  if (missing.length === 0 && unformatted.length === 0) return true;
  return gaveUp !== null && missing.every((text) => gaveUp.includes(text));
}
