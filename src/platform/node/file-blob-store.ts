import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BlobStoreError, type BlobPage, type BlobStore } from "../blob-store";

// Attachments' bytes as files under `root` (the data folder's attachments/), one per
// SHA-256: <root>/<first two hex digits>/<the hash>, so no folder holds more than a
// 256th of them. A file is written under a temporary name in the same folder, flushed, then
// renamed into place: a reader sees the whole file or none, and a crash leaves at most a
// temporary file, never a short one under a hash. Files are private (0600, folders 0700).

const KEY = /^[0-9a-f]{64}$/;
const FOLDER = /^[0-9a-f]{2}$/;

export function fileBlobStore(root: string): BlobStore {
  const pathOf = (key: string) => {
    // Keys are hashes the service computed; anything else would be a path the caller chose.
    if (!KEY.test(key)) throw new BlobStoreError(`not a SHA-256 key: ${key.slice(0, 80)}`);
    return join(root, key.slice(0, 2), key);
  };
  return {
    async put(key, bytes) {
      const file = pathOf(key);
      const folder = join(root, key.slice(0, 2));
      const temporary = join(folder, `.${key}.${randomBytes(6).toString("hex")}.tmp`);
      try {
        await mkdir(folder, { recursive: true, mode: 0o700 });
        await writeFile(temporary, bytes, { mode: 0o600, flush: true });
        await rename(temporary, file);
      } catch (err) {
        await rm(temporary, { force: true }).catch(() => {});
        throw new BlobStoreError(`could not store an attachment's file: ${(err as Error).message}`, { cause: err });
      }
    },
    async get(key) {
      try {
        return new Uint8Array(await readFile(pathOf(key)));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw new BlobStoreError(`could not read an attachment's file: ${(err as Error).message}`, { cause: err });
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async list(options) {
      try {
        return await listFiles(root, options);
      } catch (err) {
        throw new BlobStoreError(`could not list the attachments' files: ${(err as Error).message}`, { cause: err });
      }
    },
  };
}

/**
 * The files' keys in order, folder by folder (a folder's name is its keys' first two
 * digits, so the order is the keys'), each folder read only when the page reaches it;
 * temporary files (dot-names) are not keys. Whenever it was last written counts as stored.
 */
async function listFiles(root: string, { after = "", limit }: { after?: string; limit: number }): Promise<BlobPage> {
  const items: BlobPage["items"] = [];
  const folders = (await names(root)).filter((f) => FOLDER.test(f) && f >= after.slice(0, 2)).sort();
  for (const folder of folders) {
    const keys = (await names(join(root, folder))).filter((k) => KEY.test(k) && k > after).sort();
    for (const key of keys) {
      if (items.length === limit) return { items, done: false };
      // A file removed since the folder was read is simply not listed.
      const stats = await stat(join(root, folder, key)).catch(() => undefined);
      if (stats) items.push({ key, storedAt: stats.mtime });
    }
  }
  return { items, done: true };
}

/** The names in a folder; none when it does not exist (no upload yet). */
async function names(folder: string): Promise<string[]> {
  try {
    return await readdir(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}
