// The database thread (see runOnThread): one native connection to the embedded file, the
// requests of the event loop's thread answered in the order they arrive, and the batches
// that arrive while a commit runs committed together.
import { parentPort, workerData } from "node:worker_threads";
import { groupCommits } from "./group-commit";
import { nativeStatements, openConnection, type NativeStatements } from "./native-connection";
import { READY, threadError, type ThreadReply, type ThreadRequest } from "./database-thread";

const port = parentPort!;
const answer = (reply: ThreadReply) => port.postMessage(reply);

let statements: NativeStatements;
try {
  statements = nativeStatements(openConnection((workerData as { path: string }).path));
} catch (err) {
  answer([READY, false, threadError(err)]);
  process.exit(1);
}
const batch = groupCommits(statements.batch);

port.on("message", (request: ThreadRequest) => {
  const id = request[0];
  try {
    switch (request[1]) {
      case "execute":
        return answer([id, true, statements.execute(request[2], request[3])]);
      case "batch":
        return void batch(request[2], request[3]).then(
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
});
answer([READY, true, null]);
