// The database thread (see ThreadClient): one native connection to the embedded file, the
// requests of the event loop's thread answered in the order they arrive, and the batches
// that arrive while a commit runs committed together.
import { parentPort, workerData } from "node:worker_threads";
import { groupCommits } from "./group-commit";
import { nativeStatements, openConnection, type NativeStatements } from "./native-connection";
import type { InStatement } from "@libsql/client";
import { READY, SLOT_LIMIT, sendTogether, threadError, type ThreadReply, type ThreadRequest, type ThreadStatement } from "./database-thread";

const port = parentPort!;
// The answers of one commit's batches are all settled before this microtask runs.
const answer = sendTogether<ThreadReply>((replies) => port.postMessage(replies), queueMicrotask);

let statements: NativeStatements;
try {
  statements = nativeStatements(openConnection((workerData as { path: string }).path));
} catch (err) {
  port.postMessage([[READY, false, threadError(err)]] satisfies ThreadReply[]);
  process.exit(1);
}
const batch = groupCommits(statements.batch);

// Each slot's SQL, as the event loop's thread last sent it (see ThreadStatement). Read when
// a request arrives, before a later one can give its slot to another statement.
const slots = new Array<string>(SLOT_LIMIT);
function statement([slot, sql, args]: ThreadStatement): InStatement {
  if (sql !== undefined) slots[slot] = sql;
  return { sql: slots[slot]!, args: args ?? [] };
}

port.on("message", (requests: ThreadRequest[]) => {
  for (const request of requests) handle(request);
});

function handle(request: ThreadRequest) {
  const id = request[0];
  try {
    switch (request[1]) {
      case "execute":
        return answer([id, true, statements.execute(statement(request[2]))]);
      case "batch":
        return void batch(request[2].map(statement), request[3]).then(
          (results) => answer([id, true, results]),
          (err: unknown) => answer([id, false, threadError(err)]),
        );
      case "executeMultiple":
        statements.executeMultiple(request[2]);
        return answer([id, true, null]);
      case "close":
        // After the batches already queued: their flush was scheduled before this.
        return void setImmediate(() => {
          statements.close();
          port.close();
        });
    }
  } catch (err) {
    answer([id, false, threadError(err)]);
  }
}
answer([READY, true, null]);
