import type { Client, InArgs, InStatement, Replicated, ResultSet, Transaction, TransactionMode } from "@libsql/client";

/**
 * A Client that passes every call to `inner` and tells `onBatch` how many seconds each
 * batch took (a round trip: on the embedded file, the wait for the database thread, the
 * group commit and its fsync included). For the database batch latency of GET /metrics.
 */
export class TimedClient implements Client {
  constructor(
    private readonly inner: Client,
    private readonly onBatch: (seconds: number) => void,
  ) {}

  get closed(): boolean {
    return this.inner.closed;
  }

  get protocol(): string {
    return this.inner.protocol;
  }

  execute(stmt: InStatement, args?: InArgs): Promise<ResultSet> {
    return args === undefined ? this.inner.execute(stmt) : this.inner.execute(stmt as string, args);
  }

  async batch(stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode): Promise<ResultSet[]> {
    const started = performance.now();
    try {
      return await this.inner.batch(stmts, mode);
    } finally {
      this.onBatch((performance.now() - started) / 1000);
    }
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.inner.migrate(stmts);
  }

  transaction(mode?: TransactionMode): Promise<Transaction> {
    return this.inner.transaction(mode);
  }

  executeMultiple(sql: string): Promise<void> {
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
