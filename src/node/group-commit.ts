import type { Client, InStatement, ResultSet, TransactionMode } from "@libsql/client";

interface Pending {
  statements: InStatement[];
  mode: TransactionMode | undefined;
  resolve(results: ResultSet[]): void;
  reject(err: unknown): void;
}

/**
 * Makes an embedded database commit the batches of concurrent requests together: every
 * `batch` called in the same turn of the event loop runs in one transaction, in call
 * order, so a busy server pays one commit (one fsync with synchronous=FULL) per turn
 * rather than per request. Each caller's promise settles only after that transaction has
 * committed. If it fails, nothing of it was kept, and each batch runs again alone: a
 * failing statement fails only its own batch. A batch alone in its turn runs as before.
 * Running the batches back to back is what serial execution would do, so each still
 * sees the writes of those before it, as its own transaction would.
 */
export function groupCommits(client: Client): Client {
  const batch = client.batch.bind(client);
  let queue: Pending[] = [];

  async function flush() {
    const group = queue;
    queue = [];
    if (group.length === 1) {
      const [only] = group as [Pending];
      return batch(only.statements, only.mode).then(only.resolve, only.reject);
    }
    let results: ResultSet[];
    try {
      results = await batch(
        group.flatMap((p) => p.statements),
        "write",
      );
    } catch {
      for (const p of group) await batch(p.statements, p.mode).then(p.resolve, p.reject);
      return;
    }
    let at = 0;
    for (const p of group) {
      p.resolve(results.slice(at, at + p.statements.length));
      at += p.statements.length;
    }
  }

  client.batch = (statements: InStatement[], mode?: TransactionMode) =>
    new Promise<ResultSet[]>((resolve, reject) => {
      if (queue.length === 0) setImmediate(() => void flush());
      queue.push({ statements, mode, resolve, reject });
    });
  return client;
}
