import type { InArgs, InStatement, TransactionMode } from "@libsql/core/api";

type Statements = Array<InStatement | [string, InArgs?]>;
type Batch<R> = (statements: Statements, mode?: TransactionMode) => R[] | Promise<R[]>;

interface Pending<R> {
  statements: Statements;
  mode: TransactionMode | undefined;
  resolve(results: R[]): void;
  reject(err: unknown): void;
}

/**
 * Makes an embedded database commit the batches of concurrent requests together: every
 * batch that arrives before the next turn of the event loop runs in one transaction, in
 * arrival order, so a busy server pays one commit (one fsync with synchronous=FULL) per
 * turn rather than per request. Each caller's promise settles only after that transaction
 * has committed. If it fails, nothing of it was kept, and each batch runs again alone: a
 * failing statement fails only its own batch. A batch alone in its turn runs as before.
 * Running the batches back to back is what serial execution would do, so each still sees
 * the writes of those before it, as its own transaction would.
 */
export function groupCommits<R>(batch: Batch<R>): (statements: Statements, mode?: TransactionMode) => Promise<R[]> {
  let queue: Array<Pending<R>> = [];

  async function runAlone(p: Pending<R>) {
    try {
      p.resolve(await batch(p.statements, p.mode));
    } catch (err) {
      p.reject(err);
    }
  }

  async function flush() {
    const group = queue;
    queue = [];
    if (group.length === 1) return runAlone(group[0]!);
    let results: R[];
    try {
      results = await batch(
        group.flatMap((p) => p.statements),
        "write",
      );
    } catch {
      for (const p of group) await runAlone(p);
      return;
    }
    let at = 0;
    for (const p of group) {
      p.resolve(results.slice(at, at + p.statements.length));
      at += p.statements.length;
    }
  }

  return (statements, mode) =>
    new Promise<R[]>((resolve, reject) => {
      if (queue.length === 0) setImmediate(() => void flush());
      queue.push({ statements, mode, resolve, reject });
    });
}
