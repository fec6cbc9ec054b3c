// ---------------------------------------------------------------------------------------
// Texts being written now, in this process, that requests follow as they grow: a reply a
// model writes in the background, which the request that asked for it, and any later
// request, read from wherever they are up to. A text ends with a result or an error; it is
// forgotten a while after it ends. Nothing here outlives the process: what must last is in
// the database, and a follower elsewhere reads it from there.
// ---------------------------------------------------------------------------------------

/** What a follower reads: more of the text (the offset after it), then how it ended. */
export type LiveEvent<R> = { type: "text"; text: string; offset: number } | { type: "end"; result: R } | { type: "error"; error: unknown };

/** How long an ended text stays to be read by followers that were about to ask. */
const KEPT_AFTER_END_MS = 30_000;

export class LiveText<R> {
  /** Stops the writing: only its writer aborts it (on Workers, another request may not touch its I/O). */
  readonly stop = new AbortController();
  #stopAsked = false;
  #text = "";
  #end: { result: R } | { error: unknown } | undefined;
  #waiting: Array<() => void> = [];

  get text(): string {
    return this.#text;
  }

  get ended(): boolean {
    return this.#end !== undefined;
  }

  /** Whether a reader asked the writer to stop; the writer looks (askStop). */
  get stopAsked(): boolean {
    return this.#stopAsked;
  }

  /** Asks the writer to stop: it aborts `stop` itself, from its own request, when it next looks. */
  askStop(): void {
    this.#stopAsked = true;
  }

  append(more: string): void {
    if (this.#end || more === "") return;
    this.#text += more;
    this.#wake();
  }

  end(result: R): void {
    if (this.#end) return;
    this.#end = { result };
    this.#wake();
  }

  fail(error: unknown): void {
    if (this.#end) return;
    this.#end = { error };
    this.#wake();
  }

  /** The text from `offset` (UTF-16 units) as it grows, then its end; stops early when `signal` aborts. */
  async *follow(offset: number, signal?: AbortSignal): AsyncGenerator<LiveEvent<R>, void, undefined> {
    let at = Math.min(Math.max(0, offset), this.#text.length);
    for (;;) {
      if (signal?.aborted) return;
      if (this.#text.length > at) {
        const text = this.#text.slice(at);
        at = this.#text.length;
        yield { type: "text", text, offset: at };
        continue;
      }
      const end = this.#end;
      if (end) {
        yield "result" in end ? { type: "end", result: end.result } : { type: "error", error: end.error };
        return;
      }
      await new Promise<void>((wake) => {
        this.#waiting.push(wake);
        signal?.addEventListener("abort", () => wake(), { once: true });
      });
    }
  }

  /** How the text ends: its result, or its error thrown. */
  async result(): Promise<R> {
    for await (const event of this.follow(this.#text.length)) {
      if (event.type === "end") return event.result;
      if (event.type === "error") throw event.error;
    }
    throw new Error("a live text's follower stopped before its end");
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }
}

/**
 * The texts being written in this process, by id, for other requests to follow. Not
 * `shared` on Workers: a request there may not wait on what another request resolves, so
 * other requests read a text from the database instead, and `get` finds nothing.
 */
export class LiveTexts {
  readonly #texts = new Map<string, LiveText<unknown>>();
  readonly #shared: boolean;

  constructor(options: { shared: boolean } = { shared: true }) {
    this.#shared = options.shared;
  }

  start<R>(id: string): LiveText<R> {
    const text = new LiveText<R>();
    this.#texts.set(id, text as LiveText<unknown>);
    return text;
  }

  get<R>(id: string): LiveText<R> | undefined {
    return this.#shared ? (this.#texts.get(id) as LiveText<R> | undefined) : undefined;
  }

  /** Forgets an ended text, once its late followers have had time to read it. */
  forgetLater(id: string): void {
    setTimeout(() => this.#texts.delete(id), KEPT_AFTER_END_MS).unref?.();
  }
}
