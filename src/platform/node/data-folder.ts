import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Logger } from "../log";

// The data folder holds everything a stranger on the same machine must not read: the
// database (every conversation), the session signing key and the local-login key (either
// lets its holder sign in as anyone). So the folder is made 0700 and its files 0600 when they
// are created, and made so again at start when they are looser (a copy, an older version of
// this server, an archive unpacked with its own modes).

const PRIVATE_FILE = 0o600;
const PRIVATE_FOLDER = 0o700;

/** The service's own files in its data folder, beside the database file `db`. */
export function ownFiles(db: string): string[] {
  const name = basename(db);
  return [name, `${name}-wal`, `${name}-shm`, `${name}-journal`, "local-login-key.json", "session-key.json", "attachments"];
}

/** Makes the folder (0700) if it is missing; a folder there already is left as it is (see secureDataFolder). */
export function makeDataFolder(folder: string): void {
  mkdirSync(folder, { recursive: true, mode: PRIVATE_FOLDER });
}

/**
 * Before the embedded database opens: its folder made 0700 and its file created 0600 if
 * missing (SQLite then gives its -wal and -shm files the database file's mode), and the
 * service's files already there made 0600, and the folder 0700, where they are looser. A
 * folder that holds other files than the service's (the database put in a folder of the
 * operator's, such as the working directory) is not changed, only reported.
 */
export function secureDataFolder(db: string, log?: Logger): void {
  const folder = dirname(db);
  makeDataFolder(folder);
  if (!existsSync(db)) {
    try {
      closeSync(openSync(db, "a", PRIVATE_FILE));
    } catch {
      // A folder that cannot be written: SQLite's own open says so, with its reason.
    }
  }
  for (const name of ownFiles(db)) {
    const file = join(folder, name);
    if (existsSync(file)) tighten(file, log);
  }
  const own = new Set(ownFiles(db));
  const others = readdirSync(folder).filter((name) => !own.has(name));
  if (others.length === 0) tighten(folder, log);
  else if (statSync(folder).mode & 0o077) {
    log?.warn(
      `the database's folder ${resolve(folder)} can be read by other users of this machine and holds other files too, so it is left as it is: ` +
        "its database and key files are private (0600); give the database a folder of its own (DATABASE_URL=file:<folder>/local.db) to make the whole folder private",
      { others: others.slice(0, 5) },
    );
  }
}

/**
 * Removes the group's and others' access from a file or folder that has any, keeping the
 * owner's as it is (a read-only file stays read-only). A file whose mode cannot be changed
 * (immutable, another owner's) is reported, not fatal: the database's own checks say what
 * that means for serving.
 */
export function tighten(path: string, log?: Logger): void {
  const current = statSync(path).mode & 0o777;
  if ((current & 0o077) === 0) return;
  const mode = current & 0o700;
  try {
    chmodSync(path, mode);
  } catch (err) {
    log?.warn(`${resolve(path)} can be read by other users of this machine (mode ${current.toString(8)}), and its mode cannot be changed`, { err });
    return;
  }
  log?.warn(`${resolve(path)} could be read by other users of this machine (mode ${current.toString(8)}): made it ${mode.toString(8)}`);
}
