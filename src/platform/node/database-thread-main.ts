// The database thread (see ThreadClient): one native connection to the embedded file, the
// requests of the event loop's thread answered in the order they arrive, and the batches
// that arrive while a commit runs committed together.
import { accessSync, constants } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
// The error classes and types come from @libsql/core/api, which @libsql/client re-exports:
// importing @libsql/client itself loads its remote clients too, and made this thread's start
// cost 200 ms of CPU instead of 60 (every server start and every test's database).
import { LibsqlError } from "@libsql/core/api";
import { groupCommits } from "./group-commit";
import { nativeStatements, openConnection, type NativeStatements } from "./native-connection";
import type { InStatement, TransactionMode } from "@libsql/core/api";
import { READY, SLOT_LIMIT, sendTogether, threadError, type ThreadReply, type ThreadRequest, type ThreadStatement } from "./database-thread";

const port = parentPort!;
// The answers of one commit's batches are all settled before this microtask runs.
const answer = sendTogether<ThreadReply>((replies) => port.postMessage(replies), queueMicrotask);

const { path } = workerData as { path: string };
let statements: NativeStatements;
try {
  statements = nativeStatements(openConnection(path));
} catch (err) {
  port.postMessage([[READY, false, threadError(err)]] satisfies ThreadReply[]);
  process.exit(1);
}

/**
 * SQLite keeps a WAL database's index in the `-shm` file, mapped into memory, and readers
 * as well as writers write to that mapping. Once the file is made immutable (chattr +i), the
 * kernel answers the next such write with SIGBUS, which no JavaScript can catch: the
 * process would end. So the file is checked (one access(2) call) before each statement or
 * batch runs, and while it cannot be written the database is refused with an I/O error
 * (503 at the edge) instead; once the file is writable again, service resumes by itself.
 */
const sharedMemory = `${path}-shm`;
function refuseUnwritableSharedMemory(): void {
  try {
    accessSync(sharedMemory, constants.W_OK);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code;
    // Not there yet (no statement has run): SQLite creates it, writable.
    if (why === "ENOENT") return;
    throw new LibsqlError(
      `the database's shared-memory file ${sharedMemory} cannot be written (${why}): the database files are immutable or otherwise unwritable; restore their permissions`,
      "SQLITE_IOERR",
      "SQLITE_IOERR_SHMMAP",
    );
  }
}

const batch = groupCommits((stmts: Parameters<NativeStatements["batch"]>[0], mode?: TransactionMode) => {
  refuseUnwritableSharedMemory();
  return statements.batch(stmts, mode);
});

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
      case "execute": {
        // The slot's SQL is kept first, even when the statement is refused.
        const stmt = statement(request[2]);
        refuseUnwritableSharedMemory();
        return answer([id, true, statements.execute(stmt)]);
      }
      case "batch":
        return void batch(request[2].map(statement), request[3]).then(
          (results) => answer([id, true, results]),
          (err: unknown) => answer([id, false, threadError(err)]),
        );
      case "executeMultiple":
        refuseUnwritableSharedMemory();
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
