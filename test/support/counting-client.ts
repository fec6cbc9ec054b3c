import type { Client, InArgs, InStatement, Replicated, ResultSet, Transaction, TransactionMode } from "@libsql/client";

/**
 * A Client that passes every call to `inner` and counts the round trips: each call that
 * reaches the database (execute, batch, executeMultiple, migrate, a transaction begun).
 * The driver is the network boundary in production (a remote libSQL server), so the
 * count is what a request costs there. Tests and benchmarks build their database over it.
 */
export class CountingClient implements Client {
  #trips = 0;

  constructor(
    private readonly inner: Client,
    private readonly options: {
      /** Told each statement's SQL that `execute` or `batch` runs. */
      onStatement?(sql: string): void;
      /** Told each statement's SQL and how many rows it returned, once `execute` or `batch` has run. */
      onRows?(sql: string, rows: number): void;
    } = {},
  ) {}

  /** Round trips so far. */
  get trips(): number {
    return this.#trips;
  }

  get closed(): boolean {
    return this.inner.closed;
  }

  get protocol(): string {
    return this.inner.protocol;
  }

  execute(stmt: InStatement, args?: InArgs): Promise<ResultSet> {
    this.#trips++;
    const sql = typeof stmt === "string" ? stmt : stmt.sql;
    this.options.onStatement?.(sql);
    const result = args === undefined ? this.inner.execute(stmt) : this.inner.execute(stmt as string, args);
    const onRows = this.options.onRows;
    if (!onRows) return result;
    return result.then((r) => {
      onRows(sql, r.rows.length);
      return r;
    });
  }

  batch(stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode): Promise<ResultSet[]> {
    this.#trips++;
    const sqls = stmts.map((stmt) => (typeof stmt === "string" ? stmt : Array.isArray(stmt) ? stmt[0] : stmt.sql));
    for (const sql of sqls) this.options.onStatement?.(sql);
    const results = this.inner.batch(stmts, mode);
    const onRows = this.options.onRows;
    if (!onRows) return results;
    return results.then((rs) => {
      for (const [i, r] of rs.entries()) onRows(sqls[i]!, r.rows.length);
      return rs;
    });
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    this.#trips++;
    return this.inner.migrate(stmts);
  }

  transaction(mode?: TransactionMode): Promise<Transaction> {
    this.#trips++;
    return this.inner.transaction(mode);
  }

  executeMultiple(sql: string): Promise<void> {
    this.#trips++;
    return this.inner.executeMultiple(sql);
  }

  sync(): Promise<Replicated> {
    return this.inner.sync();
  }

  close(): void {
    this.inner.close();
  }

  reconnect(): void {
    this.inner.reconnect();
  }
}
