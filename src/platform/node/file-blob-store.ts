import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BlobStoreError, type BlobStore } from "../blob-store";

// Attachments' bytes as files under `root` (the data folder's attachments/), one per
// SHA-256: <root>/<first two hex digits>/<the hash>, so no folder holds more than a
// 256th of them. A file is written under a temporary name in the same folder, flushed, then
// renamed into place: a reader sees the whole file or none, and a crash leaves at most a
// temporary file, never a short one under a hash. Files are private (0600, folders 0700).

const KEY = /^[0-9a-f]{64}$/;

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
  };
}
