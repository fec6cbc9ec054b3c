import { Worker } from "node:worker_threads";
import { LibsqlBatchError, LibsqlError, type Client, type InArgs, type InStatement, type ResultSet, type Row, type TransactionMode } from "@libsql/client";
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

/**
 * Makes a @libsql/client Client for an embedded file run `execute` and `batch` on a
 * database thread: one native connection there, each statement prepared once, and the
 * batches that arrive while it is busy committed together (see groupCommits). SQLite's
 * work, its commits' fsyncs included, then no longer stops this thread's event loop,
 * which stays free for HTTP and the model calls; on a machine with two cores or more the
 * two run side by side. Results keep @libsql/client's shape (rows by name and by
 * position) and its errors and codes, so drizzle and the callers see no change. The
 * client's own connection is left to migrations, which run before this.
 */
export async function runOnThread(client: Client, path: string): Promise<Client> {
  const { module, entry } = threadEntry();
  const worker = new Worker(module, { workerData: { entry, path } });
  const calls = new Map<number, { resolve(value: unknown): void; reject(err: unknown): void }>();
  let nextId = READY + 1;
  let stopped: Error | undefined;

  function stop(err: Error) {
    stopped ??= err;
    for (const call of calls.values()) call.reject(stopped);
    calls.clear();
  }
  worker.on("message", (replies: ThreadReply[]) => {
    for (const [id, ok, value] of replies) {
      const call = calls.get(id);
      if (!call) continue;
      calls.delete(id);
      if (ok) call.resolve(value);
      else call.reject(errorFrom(value));
    }
    // The thread keeps the process alive only while an answer is awaited.
    if (calls.size === 0) worker.unref();
  });
  worker.on("error", (err) => stop(new Error(`the database thread failed: ${err.message}`, { cause: err })));
  worker.on("exit", (code) => stop(new LibsqlError(code === 0 ? "The client is closed" : `the database thread stopped (exit code ${code})`, "CLIENT_CLOSED")));

  // The requests made in one turn of this thread's event loop go in one message.
  const post = sendTogether<ThreadRequest>((requests) => worker.postMessage(requests), setImmediate);

  let closed = false;
  function call(request: ThreadRequest): Promise<unknown> {
    if (stopped) return Promise.reject(stopped);
    if (closed) return Promise.reject(new LibsqlError("The client is closed", "CLIENT_CLOSED"));
    return new Promise((resolve, reject) => {
      if (calls.size === 0) worker.ref();
      calls.set(request[0], { resolve, reject });
      post(request);
    });
  }

  await new Promise((resolve, reject) => calls.set(READY, { resolve, reject }));
  worker.unref();

  // The SQL each slot holds, most recently used last; a full table gives its oldest slot
  // to the next new statement (and sends that statement's text with it).
  const slots = new Map<string, number>();
  function crossing(stmt: InStatement | [string, InArgs?], args?: InArgs): ThreadStatement {
    let sql: string;
    if (typeof stmt === "string") sql = stmt;
    else if (Array.isArray(stmt)) [sql, args] = stmt;
    else ({ sql, args } = stmt);
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

  client.execute = (async (stmt: InStatement, args?: InArgs) => resultSet((await call([nextId++, "execute", crossing(stmt, args)])) as RawResult)) as Client["execute"];
  client.batch = async (stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode) =>
    ((await call([nextId++, "batch", stmts.map((stmt) => crossing(stmt)), mode])) as RawResult[]).map(resultSet);
  client.executeMultiple = async (sql: string) => void (await call([nextId++, "executeMultiple", sql]));
  // An interactive transaction would hold the write lock across awaits, and every other
  // request's batch would wait behind it: the app writes in batches only.
  client.transaction = () => Promise.reject(new Error("interactive transactions are not used on the embedded database: write with batch()"));
  const close = client.close.bind(client);
  client.close = () => {
    if (closed) return;
    closed = true;
    close();
    // The thread answers what was asked before (those calls still settle), then closes
    // the file and ends; anything asked from now on is refused.
    if (!stopped) post([nextId++, "close"]);
  };
  return client;
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
  let cls = rowClasses.get(key);
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
