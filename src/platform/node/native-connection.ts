import QuickLRU from "quick-lru";
import { LibsqlBatchError, LibsqlError, type InArgs, type InStatement, type TransactionMode } from "@libsql/core/api";
import Database from "libsql";

/** How many distinct statements a connection keeps prepared, the least recently used going first (up to twice as many for a moment: quick-lru drops them in halves); the app uses far fewer. */
const PREPARED_LIMIT = 1000;

type Connection = InstanceType<typeof Database>;
type Statement = ReturnType<Connection["prepare"]>;

/**
 * A statement's result as values by position, ready to cross to another thread:
 * integers are numbers (one past 2^53 is an error, as in @libsql/client's default integer
 * mode), blobs are ArrayBuffers. The database thread's client gives rows their names.
 */
export interface RawResult {
  columns: string[];
  columnTypes: string[];
  rows: unknown[][];
  rowsAffected: number;
  lastInsertRowid: bigint | undefined;
}

/**
 * Opens the embedded file's serving connection. Foreign keys: D1 enforces them, so this
 * connection does too, so that both behave alike. synchronous=FULL: every commit is on
 * disk before its reply, so an acknowledged message survives power loss, not only a
 * crash; group commit makes that one fsync per group of requests, not per request.
 */
export function openConnection(path: string): Connection {
  const connection = new Database(path);
  connection.exec("PRAGMA foreign_keys = ON");
  connection.exec("PRAGMA synchronous = FULL");
  connection.exec("PRAGMA busy_timeout = 5000");
  // SQLite's default page cache is 2 MiB: past that, a chat message read about ten pages
  // back from the file, a system call each. 64 MiB holds a busy database's working set.
  connection.exec("PRAGMA cache_size = -65536");
  // A checkpoint copies the WAL's pages back into the database file. The pages every
  // message rewrites (the holds, the day's credits, the indexes' last leaves) are copied
  // once per checkpoint however often they changed, so checkpointing every 10,000 pages
  // (a WAL of up to ~40 MiB) rather than SQLite's 1,000 copies them a tenth as often.
  connection.exec("PRAGMA wal_autocheckpoint = 10000");
  return connection;
}

/**
 * Runs statements on one native connection (the `libsql` package's Database, the engine
 * @libsql/client itself drives for files) with each statement prepared once. @libsql/client
 * prepares every statement again on each call, which for an insert into a table with
 * triggers (the messages and their search index) compiles the triggers too; it also learns
 * whether a statement returns rows by catching an exception. Errors are @libsql/client's
 * (LibsqlError, LibsqlBatchError with the failing statement's index), with its codes.
 */
export function nativeStatements(native: Connection) {
  // The least recently used statement goes first when the cache is full.
  const prepared = new QuickLRU<string, PreparedStatement>({ maxSize: PREPARED_LIMIT });

  function prepare(sql: string): PreparedStatement {
    let statement = prepared.get(sql);
    if (!statement) {
      try {
        statement = new PreparedStatement(native.prepare(sql));
      } catch (err) {
        throw libsqlError(err);
      }
      prepared.set(sql, statement);
    }
    return statement;
  }

  function execute(stmt: InStatement | [string, InArgs?], args?: InArgs): RawResult {
    if (typeof stmt === "string") return prepare(stmt).run(args ?? []);
    if (Array.isArray(stmt)) return prepare(stmt[0]).run(stmt[1] ?? []);
    return prepare(stmt.sql).run(stmt.args ?? []);
  }

  return {
    execute,
    /** The statements in one transaction: all kept, or none. */
    batch(stmts: Array<InStatement | [string, InArgs?]>, mode: TransactionMode = "deferred"): RawResult[] {
      execute(BEGIN[mode]);
      try {
        const results = stmts.map((stmt, i) => {
          try {
            return execute(stmt);
          } catch (err) {
            // As @libsql/client says which statement of a batch failed.
            if (!(err instanceof LibsqlError)) throw err;
            throw new LibsqlBatchError(err.message, i, err.code, err.extendedCode, err.rawCode, err.cause instanceof Error ? err.cause : undefined);
          }
        });
        execute("COMMIT");
        return results;
      } finally {
        if (native.inTransaction) native.exec("ROLLBACK");
      }
    },
    executeMultiple(sql: string): void {
      try {
        native.exec(sql);
      } catch (err) {
        throw libsqlError(err);
      }
    },
    close: () => native.close(),
  };
}

export type NativeStatements = ReturnType<typeof nativeStatements>;

const BEGIN: Record<TransactionMode, string> = { write: "BEGIN IMMEDIATE", read: "BEGIN TRANSACTION READONLY", deferred: "BEGIN DEFERRED" };

class PreparedStatement {
  readonly #statement: Statement;
  readonly #reader: boolean;
  readonly #columns: string[] = [];
  readonly #columnTypes: string[] = [];

  constructor(statement: Statement) {
    this.#statement = statement;
    // Integers come back as bigint so that one past 2^53 is caught, not rounded.
    statement.safeIntegers(true);
    this.#reader = statement.reader;
    if (this.#reader) {
      statement.raw(true);
      for (const column of statement.columns()) {
        this.#columns.push(column.name);
        this.#columnTypes.push(column.type ?? "");
      }
    }
  }

  run(args: InArgs): RawResult {
    const params = toSqlArgs(args);
    try {
      if (!this.#reader) {
        const info = this.#statement.run(params);
        return { columns: [], columnTypes: [], rows: [], rowsAffected: info.changes, lastInsertRowid: BigInt(info.lastInsertRowid) };
      }
      const rows = this.#statement.all(params) as unknown[][];
      for (const values of rows) for (let i = 0; i < values.length; i++) values[i] = fromSql(values[i]);
      return { columns: this.#columns, columnTypes: this.#columnTypes, rows, rowsAffected: 0, lastInsertRowid: undefined };
    } catch (err) {
      throw libsqlError(err);
    }
  }
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function fromSql(value: unknown): unknown {
  if (typeof value === "bigint") {
    if (value < MIN_SAFE || value > MAX_SAFE) throw new RangeError("Received integer which cannot be safely represented as a JavaScript number");
    return Number(value);
  }
  // Blobs as ArrayBuffers, as @libsql/client returns them.
  if (Buffer.isBuffer(value)) return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
  return value;
}

function toSqlArgs(args: InArgs): unknown[] | Record<string, unknown> {
  if (Array.isArray(args)) return args.map(toSql);
  const named: Record<string, unknown> = {};
  for (const name in args) named[/^[@$:]/.test(name) ? name.slice(1) : name] = toSql(args[name]);
  return named;
}

function toSql(value: unknown): unknown {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments");
      return value;
    case "boolean":
      return value ? 1 : 0;
    case "undefined":
      throw new TypeError("undefined cannot be passed as argument to the database");
  }
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof Date) return value.valueOf();
  return value;
}

/**
 * The error @libsql/client would have thrown, so callers can read the same codes: the
 * native error's code is SQLite's extended one (SQLITE_IOERR_WRITE), its base the name's
 * first word (SQLITE_IOERR).
 */
function libsqlError(err: unknown): unknown {
  if (!(err instanceof Database.SqliteError)) return err;
  const rawCode = (err as { rawCode?: number }).rawCode;
  const base = /^SQLITE_[A-Z]+/.exec(err.code)?.[0] ?? "SQLITE_UNKNOWN";
  return new LibsqlError(err.message, base, err.code, rawCode, err);
}
