import type { R2Bucket } from "@cloudflare/workers-types";
import { BlobStoreError, type BlobStore } from "../blob-store";

// Attachments' bytes in an R2 bucket (the ATTACHMENTS binding in wrangler.toml; miniflare's
// local R2 under `npm run dev` and in the workerd tests). An R2 put is atomic: the object is
// there whole once put resolves, or not at all.

export function r2BlobStore(bucket: R2Bucket): BlobStore {
  return {
    async put(key, bytes) {
      try {
        await bucket.put(key, bytes);
      } catch (err) {
        throw new BlobStoreError(`could not store an attachment in R2: ${(err as Error).message}`, { cause: err });
      }
    },
    async get(key) {
      let object: Awaited<ReturnType<R2Bucket["get"]>>;
      try {
        object = await bucket.get(key);
      } catch (err) {
        throw new BlobStoreError(`could not read an attachment from R2: ${(err as Error).message}`, { cause: err });
      }
      return object ? new Uint8Array(await object.arrayBuffer()) : undefined;
    },
    async delete(key) {
      await bucket.delete(key);
    },
    async list({ after, limit }) {
      // R2 lists keys in lexicographic order, which for hex hashes is the order asked for.
      let listed: Awaited<ReturnType<R2Bucket["list"]>>;
      try {
        listed = await bucket.list({ limit: Math.min(limit, 1000), ...(after ? { startAfter: after } : {}) });
      } catch (err) {
        throw new BlobStoreError(`could not list the attachments in R2: ${(err as Error).message}`, { cause: err });
      }
      return { items: listed.objects.map((o) => ({ key: o.key, storedAt: o.uploaded })), done: !listed.truncated };
    },
  };
}
