import { Worker } from "node:worker_threads";
import {
  LibsqlBatchError,
  LibsqlError,
  type Client,
  type InArgs,
  type InStatement,
  type Replicated,
  type ResultSet,
  type Row,
  type Transaction,
  type TransactionMode,
} from "@libsql/core/api";
import type { RawResult } from "./native-connection";

/**
 * A statement as it crosses: its SQL travels once, and after that only the number of the
 * slot both threads keep it in (the app's statements are long, and the same few dozen
 * every time: copying and hashing their text again was most of what a batch cost to send).
 */
export type ThreadStatement = [slot: number, sql: string | undefined, args: InArgs | undefined];

/** What the event loop's thread asks of the database thread. */
export type ThreadRequest =
  | [id: number, op: "execute", stmt: ThreadStatement]
  | [id: number, op: "batch", stmts: ThreadStatement[], mode: TransactionMode | undefined]
  | [id: number, op: "executeMultiple", sql: string]
  | [id: number, op: "close"];

/**
 * Its answer: a result, or an error as plain data (errors lose their class crossing
 * threads). Both threads send what they have in one message per turn of their event loop,
 * requests and answers alike: each message costs a wake-up of the other thread, which
 * cost more than the copying when every request went alone.
 */
export type ThreadReply = [id: number, ok: true, value: RawResult | RawResult[] | null] | [id: number, ok: false, error: ThreadError];

export interface ThreadError {
  name: string;
  message: string;
  code?: string;
  extendedCode?: string;
  rawCode?: number;
  statementIndex?: number;
}

/** The database thread's first message: id 0, answered once the file is open. */
export const READY = 0;

/** How many statements' SQL the two threads keep by slot. */
export const SLOT_LIMIT = 1000;

/**
 * The database thread's first module and the entry it runs. Built (`npm start` runs the
 * bundle scripts/build-server.mjs makes, with the thread's own bundle beside this one), it
 * is that JavaScript. From source (tsx, vitest), the thread runs TypeScript as this process
 * does: thread-loader.mjs registers tsx there first, then imports the entry.
 */
function threadEntry(): { module: URL; entry: string } {
  if (import.meta.url.endsWith(".js")) {
    const module = new URL("./database-thread-main.js", import.meta.url);
    return { module, entry: module.href };
  }
  return { module: new URL("./thread-loader.mjs", import.meta.url), entry: new URL("./database-thread-main.ts", import.meta.url).href };
}

type Call = { resolve(value: unknown): void; reject(err: unknown): void };

/**
 * A @libsql/client `Client` for an embedded file whose statements run on a database
 * thread: one native connection there, each statement prepared once, and the batches that
 * arrive while it is busy committed together (see groupCommits). SQLite's work, its
 * commits' fsyncs included, then no longer stops this thread's event loop, which stays
 * free for HTTP and the model calls; on a machine with two cores or more the two run side
 * by side. Results keep @libsql/client's shape (rows by name and by position) and its
 * errors and codes, so drizzle and the callers see a Client like any other.
 *
 * It offers what the app uses: execute, batch, executeMultiple and migrate. Interactive
 * transactions are refused: one would hold the write lock across awaits, and every other
 * request's batch would wait behind it (the app writes in batches only).
 */
export class ThreadClient implements Client {
  readonly protocol = "file";
  readonly #worker: Worker;
  readonly #calls = new Map<number, Call>();
  readonly #post: (request: ThreadRequest) => void;
  // The SQL each slot holds, most recently used last; a full table gives its oldest slot
  // to the next new statement (and sends that statement's text with it).
  readonly #slots = new Map<string, number>();
  #nextId = READY + 1;
  #stopped: Error | undefined;
  #closed = false;

  /**
   * Starts the database thread on the file at `path` (migrated already), once it has opened
   * it. `builtEntry`: the thread's built bundle (dist/database-thread-main.js) to run even from
   * source, as the tests do: a thread that registers tsx first costs ~0.4 s more CPU to start.
   */
  static async open(path: string, builtEntry?: URL): Promise<ThreadClient> {
    const client = new ThreadClient(path, builtEntry);
    await new Promise((resolve, reject) => client.#calls.set(READY, { resolve, reject }));
    client.#worker.unref();
    return client;
  }

  private constructor(path: string, builtEntry?: URL) {
    const { module, entry } = builtEntry ? { module: builtEntry, entry: builtEntry.href } : threadEntry();
    this.#worker = new Worker(module, { workerData: { entry, path } });
    this.#worker.on("message", (replies: ThreadReply[]) => {
      for (const [id, ok, value] of replies) {
        const call = this.#calls.get(id);
        if (!call) continue;
        this.#calls.delete(id);
        if (ok) call.resolve(value);
        else call.reject(errorFrom(value));
      }
      // The thread keeps the process alive only while an answer is awaited.
      if (this.#calls.size === 0) this.#worker.unref();
    });
    this.#worker.on("error", (err) => this.#stop(new Error(`the database thread failed: ${err.message}`, { cause: err })));
    this.#worker.on("exit", (code) =>
      this.#stop(new LibsqlError(code === 0 ? "The client is closed" : `the database thread stopped (exit code ${code})`, "CLIENT_CLOSED")),
    );
    // The requests made in one turn of this thread's event loop go in one message.
    this.#post = sendTogether<ThreadRequest>((requests) => this.#worker.postMessage(requests), setImmediate);
  }

  get closed(): boolean {
    return this.#closed || this.#stopped !== undefined;
  }

  async execute(stmt: InStatement, args?: InArgs): Promise<ResultSet> {
    return resultSet((await this.#call([this.#nextId++, "execute", this.#crossing(stmt, args)])) as RawResult);
  }

  async batch(stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode): Promise<ResultSet[]> {
    const results = (await this.#call([this.#nextId++, "batch", stmts.map((stmt) => this.#crossing(stmt)), mode])) as RawResult[];
    return results.map(resultSet);
  }

  /** As @libsql/client does: the statements in one transaction, with foreign keys off around it. */
  async migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    await this.execute("PRAGMA foreign_keys = OFF");
    try {
      return await this.batch(stmts, "deferred");
    } finally {
      await this.execute("PRAGMA foreign_keys = ON");
    }
  }

  async executeMultiple(sql: string): Promise<void> {
    await this.#call([this.#nextId++, "executeMultiple", sql]);
  }

  transaction(): Promise<Transaction> {
    return Promise.reject(new LibsqlError("interactive transactions are not offered on the embedded database: write with batch()", "TRANSACTION_NOT_SUPPORTED"));
  }

  sync(): Promise<Replicated> {
    return Promise.reject(new LibsqlError("sync() is for embedded replicas; this is a local file", "SYNC_NOT_SUPPORTED"));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // The thread answers what was asked before (those calls still settle), then closes
    // the file and ends; anything asked from now on is refused.
    if (!this.#stopped) this.#post([this.#nextId++, "close"]);
  }

  reconnect(): void {
    throw new LibsqlError("a closed database thread is not restarted: open another ThreadClient", "CLIENT_CLOSED");
  }

  #call(request: ThreadRequest): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    if (this.#closed) return Promise.reject(new LibsqlError("The client is closed", "CLIENT_CLOSED"));
    return new Promise((resolve, reject) => {
      if (this.#calls.size === 0) this.#worker.ref();
      this.#calls.set(request[0], { resolve, reject });
      this.#post(request);
    });
  }

  #stop(err: Error) {
    this.#stopped ??= err;
    for (const call of this.#calls.values()) call.reject(this.#stopped);
    this.#calls.clear();
  }

  #crossing(stmt: InStatement | [string, InArgs?], args?: InArgs): ThreadStatement {
    let sql: string;
    if (typeof stmt === "string") sql = stmt;
    else if (Array.isArray(stmt)) [sql, args] = stmt;
    else ({ sql, args } = stmt);
    const slots = this.#slots;
    let slot = slots.get(sql);
    if (slot !== undefined) {
      slots.delete(sql);
      slots.set(sql, slot);
      return [slot, undefined, args];
    }
    if (slots.size < SLOT_LIMIT) slot = slots.size;
    else {
      const [oldest, freed] = slots.entries().next().value!;
      slots.delete(oldest);
      slot = freed;
    }
    slots.set(sql, slot);
    return [slot, sql, args];
  }
}

/**
 * A sender that collects what is sent until `schedule` fires, then posts it as one
 * message (see ThreadReply for why).
 */
export function sendTogether<T>(postMessage: (items: T[]) => void, schedule: (flush: () => void) => unknown): (item: T) => void {
  let outbox: T[] = [];
  const flush = () => {
    const items = outbox;
    outbox = [];
    postMessage(items);
  };
  return (item) => {
    if (outbox.length === 0) schedule(flush);
    outbox.push(item);
  };
}

/** An error as plain data, on the database thread. */
export function threadError(err: unknown): ThreadError {
  if (!(err instanceof Error)) return { name: "Error", message: String(err) };
  const { code, extendedCode, rawCode, statementIndex } = err as Partial<ThreadError>;
  return { name: err.name, message: err.message, code, extendedCode, rawCode, statementIndex };
}

/** The error @libsql/client would have thrown, from its data. */
function errorFrom(e: ThreadError): Error {
  if (e.code !== undefined) {
    // Its constructor puts the code before the message again.
    const message = e.message.startsWith(`${e.code}: `) ? e.message.slice(e.code.length + 2) : e.message;
    if (e.statementIndex !== undefined) return new LibsqlBatchError(message, e.statementIndex, e.code, e.extendedCode, e.rawCode);
    return new LibsqlError(message, e.code, e.extendedCode, e.rawCode);
  }
  if (e.name === "RangeError") return new RangeError(e.message);
  if (e.name === "TypeError") return new TypeError(e.message);
  return new Error(e.message);
}

function resultSet(raw: RawResult): ResultSet {
  return new ThreadResultSet(raw);
}

class ThreadResultSet implements ResultSet {
  readonly columns: string[];
  readonly columnTypes: string[];
  readonly rows: Row[];
  readonly rowsAffected: number;
  readonly lastInsertRowid: bigint | undefined;
  readonly #values: unknown[][];

  constructor(raw: RawResult) {
    this.columns = raw.columns;
    this.columnTypes = raw.columnTypes;
    this.rows = raw.rows.length === 0 ? [] : rowsOf(raw.columns, raw.rows);
    this.rowsAffected = raw.rowsAffected;
    this.lastInsertRowid = raw.lastInsertRowid;
    this.#values = raw.rows;
  }

  toJSON() {
    const { columns, columnTypes, rowsAffected, lastInsertRowid } = this;
    return { columns, columnTypes, rows: this.#values, rowsAffected, lastInsertRowid: lastInsertRowid?.toString() ?? null };
  }
}

/**
 * Rows as @libsql/client gives them: each column by name (own, enumerable: what drizzle
 * copies when it maps a row without fields) and by position (not enumerable).
 */
function rowsOf(columns: string[], values: unknown[][]): Row[] {
  const NativeRow = rowClass(columns);
  return values.map((v) => {
    const row = new NativeRow(v) as unknown as Record<string, unknown>;
    // A name repeated (a join's `id` twice) keeps its first column's value, as @libsql/client does.
    for (let i = 0; i < columns.length; i++) if (!Object.hasOwn(row, columns[i]!)) row[columns[i]!] = v[i];
    return row as unknown as Row;
  });
}

type RowClass = new (values: unknown[]) => object;
const rowClasses = new Map<string, RowClass>();

/** One class per shape of result: positions and `length` are read from the row's values, through the prototype. */
function rowClass(columns: string[]): RowClass {
  const key = columns.join("\0");
  const cls = rowClasses.get(key);
  if (cls) return cls;
  class NativeRow {
    readonly #values: unknown[];
    constructor(values: unknown[]) {
      this.#values = values;
    }
    static at(row: NativeRow, i: number) {
      return row.#values[i];
    }
  }
  Object.defineProperty(NativeRow.prototype, "length", { value: columns.length });
  for (let i = 0; i < columns.length; i++) {
    Object.defineProperty(NativeRow.prototype, i, {
      get(this: NativeRow) {
        return NativeRow.at(this, i);
      },
    });
  }
  // Shapes are the app's statements' (a few dozen); a cap keeps ad hoc queries from growing it.
  if (rowClasses.size >= 1000) rowClasses.clear();
  rowClasses.set(key, NativeRow);
  return NativeRow;
}
