import { LibsqlBatchError, LibsqlError, type Client, type InArgs, type InStatement, type ResultSet, type Row, type TransactionMode } from "@libsql/client";
import Database from "libsql";

/** How many distinct statements a connection keeps prepared; the app uses far fewer. */
const PREPARED_LIMIT = 1000;

type Connection = InstanceType<typeof Database>;
type Statement = ReturnType<Connection["prepare"]>;

/**
 * Makes a @libsql/client Client for an embedded file run `execute` and `batch` on one
 * native connection (the `libsql` package's Database, the engine @libsql/client itself
 * drives for files) with each statement prepared once. @libsql/client prepares every
 * statement again on each call, which for an insert into a table with triggers (the
 * messages and their search index) compiles the triggers too; it also learns whether a
 * statement returns rows by catching an exception, and builds each row property by
 * property. Results keep @libsql/client's shape and its default integer mode (an integer
 * past 2^53 is an error, not a rounded number), so drizzle and the callers see no change.
 * The client's own connection is left to migrations, which run before this.
 */
export function runNatively(client: Client, native: Connection): Client {
  const prepared = new Map<string, PreparedStatement>();

  function prepare(sql: string): PreparedStatement {
    let statement = prepared.get(sql);
    if (statement) {
      // Most recently used last, so that the oldest goes first when the cache is full.
      prepared.delete(sql);
    } else {
      try {
        statement = new PreparedStatement(native.prepare(sql));
      } catch (err) {
        throw libsqlError(err);
      }
      if (prepared.size >= PREPARED_LIMIT) prepared.delete(prepared.keys().next().value!);
    }
    prepared.set(sql, statement);
    return statement;
  }

  function run(stmt: InStatement, args?: InArgs): ResultSet {
    if (typeof stmt === "string") return prepare(stmt).run(args ?? []);
    if (Array.isArray(stmt)) return prepare(stmt[0]).run(stmt[1] ?? []);
    return prepare(stmt.sql).run(stmt.args ?? []);
  }

  client.execute = (async (stmt: InStatement, args?: InArgs) => run(stmt, args)) as Client["execute"];
  client.batch = async (stmts: Array<InStatement | [string, InArgs?]>, mode: TransactionMode = "deferred") => {
    run(BEGIN[mode]);
    try {
      const results = stmts.map((stmt, i) => {
        try {
          return run(stmt as InStatement);
        } catch (err) {
          // As @libsql/client says which statement of a batch failed.
          if (!(err instanceof LibsqlError)) throw err;
          throw new LibsqlBatchError(err.message, i, err.code, err.extendedCode, err.rawCode, err.cause instanceof Error ? err.cause : undefined);
        }
      });
      run("COMMIT");
      return results;
    } finally {
      if (native.inTransaction) native.exec("ROLLBACK");
    }
  };
  client.executeMultiple = async (sql: string) => {
    try {
      native.exec(sql);
    } catch (err) {
      throw libsqlError(err);
    }
  };
  // An interactive transaction would hold the write lock across awaits, and every other
  // request's batch would wait behind it: the app writes in batches only.
  client.transaction = () => Promise.reject(new Error("interactive transactions are not used on the embedded database: write with batch()"));
  const close = client.close.bind(client);
  client.close = () => {
    close();
    native.close();
  };
  return client;
}

const BEGIN: Record<TransactionMode, string> = { write: "BEGIN IMMEDIATE", read: "BEGIN TRANSACTION READONLY", deferred: "BEGIN DEFERRED" };

class PreparedStatement {
  readonly #statement: Statement;
  readonly #reader: boolean;
  readonly #columns: string[] = [];
  readonly #columnTypes: string[] = [];
  readonly #Row: ReturnType<typeof rowClass> | undefined;

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
      this.#Row = rowClass(this.#columns.length);
    }
  }

  run(args: InArgs): ResultSet {
    const params = toSqlArgs(args);
    try {
      if (!this.#reader) {
        const info = this.#statement.run(params);
        return resultSet([], [], [], info.changes, BigInt(info.lastInsertRowid));
      }
      const rows = (this.#statement.all(params) as unknown[][]).map((values) => this.#toRow(values));
      return resultSet(this.#columns, this.#columnTypes, rows, 0, undefined);
    } catch (err) {
      throw libsqlError(err);
    }
  }

  /**
   * A row as @libsql/client gives it: each column by name (own, enumerable: what
   * drizzle copies when it maps a row without fields) and by position (not enumerable).
   */
  #toRow(values: unknown[]): Row {
    for (let i = 0; i < values.length; i++) values[i] = fromSql(values[i]);
    const row = new this.#Row!(values) as unknown as Record<string, unknown>;
    const columns = this.#columns;
    // A name repeated (a join's `id` twice) keeps its first column's value, as @libsql/client does.
    for (let i = 0; i < columns.length; i++) if (!Object.hasOwn(row, columns[i]!)) row[columns[i]!] = values[i];
    return row as unknown as Row;
  }
}

/** Rows of `count` columns: positions and `length` are read from the row's values, through the prototype. */
function rowClass(count: number) {
  class NativeRow {
    readonly #values: unknown[];
    constructor(values: unknown[]) {
      this.#values = values;
    }
    static at(row: NativeRow, i: number) {
      return row.#values[i];
    }
  }
  Object.defineProperty(NativeRow.prototype, "length", { value: count });
  for (let i = 0; i < count; i++) {
    Object.defineProperty(NativeRow.prototype, i, {
      get(this: NativeRow) {
        return NativeRow.at(this, i);
      },
    });
  }
  return NativeRow;
}

function resultSet(columns: string[], columnTypes: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({ columns, columnTypes, rows: rows.map((r) => Array.from(r as ArrayLike<unknown>)), rowsAffected, lastInsertRowid: lastInsertRowid?.toString() ?? null }),
  };
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
  if (value instanceof Date) return value.valueOf();
  return value;
}

/** The error @libsql/client would have thrown, so callers can read the same codes. */
function libsqlError(err: unknown): unknown {
  if (!(err instanceof Database.SqliteError)) return err;
  const rawCode = (err as { rawCode?: number }).rawCode;
  const base = rawCode === undefined ? "SQLITE_UNKNOWN" : (BASE_CODES[rawCode & 0xff] ?? `SQLITE_UNKNOWN_${rawCode & 0xff}`);
  return new LibsqlError(err.message, base, err.code, rawCode, err);
}

const BASE_CODES: Record<number, string> = {
  1: "SQLITE_ERROR",
  2: "SQLITE_INTERNAL",
  3: "SQLITE_PERM",
  4: "SQLITE_ABORT",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  7: "SQLITE_NOMEM",
  8: "SQLITE_READONLY",
  9: "SQLITE_INTERRUPT",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  12: "SQLITE_NOTFOUND",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
  15: "SQLITE_PROTOCOL",
  16: "SQLITE_EMPTY",
  17: "SQLITE_SCHEMA",
  18: "SQLITE_TOOBIG",
  19: "SQLITE_CONSTRAINT",
  20: "SQLITE_MISMATCH",
  21: "SQLITE_MISUSE",
  22: "SQLITE_NOLFS",
  23: "SQLITE_AUTH",
  24: "SQLITE_FORMAT",
  25: "SQLITE_RANGE",
  26: "SQLITE_NOTADB",
};
