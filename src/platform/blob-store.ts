// ---------------------------------------------------------------------------------------
// Where attachments' bytes live: beside the database, not in it. Each runtime has its own:
// files in the data folder on Node (src/platform/node/file-blob-store.ts), an R2 bucket on
// Workers (src/platform/worker/r2-blob-store.ts). Keys are the bytes' SHA-256 (hex), so a
// file stored twice is one copy; a put of a key that exists changes nothing.
// ---------------------------------------------------------------------------------------

export interface BlobStore {
  /** Stores `bytes` under `key` whole or not at all (never a half-written file). */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** The bytes under `key`, or undefined when there are none. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Removes `key`; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Stored keys in ascending order, those after `after` (all without it), at most `limit` of
   * them (a store may give fewer), each with when it was stored; `done` when none follow.
   */
  list(options: { after?: string; limit: number }): Promise<BlobPage>;
}

/** One part of a store's keys (BlobStore.list). */
export interface BlobPage {
  items: Array<{ key: string; storedAt: Date }>;
  done: boolean;
}

/** A store's fault: the bytes could not be written or read (a full disk, an unreachable bucket). */
export class BlobStoreError extends Error {
  override name = "BlobStoreError";
}
