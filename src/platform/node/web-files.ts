import QuickLRU from "quick-lru";
import { readFile, stat } from "node:fs/promises";
import { resolve, sep } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from "hono/utils/compress";
import { getMimeType } from "hono/utils/mime";
import type { AssetSource } from "../deps";

const gzipped = promisify(gzip);

/**
 * The web client's files from a directory (web/dist), for the Node server: only regular
 * files inside it, whatever `..` or encoded separators a path carries. Text files go out
 * gzipped to clients that accept it (Cloudflare does this for the Worker at its edge),
 * compressed once per version of a file and kept in memory.
 */
export function webFilesFrom(directory: string): AssetSource {
  const root = resolve(directory);
  // A rebuild names its files anew: the least recently served go first rather than grow without bound.
  const compressed = new QuickLRU<string, { version: string; body: Uint8Array<ArrayBuffer> }>({ maxSize: 500 });
  return async (path, acceptEncoding = "") => {
    let relative: string;
    try {
      relative = decodeURIComponent(path);
    } catch {
      return undefined;
    }
    if (relative.includes("\0")) return undefined;
    const file = resolve(root, `.${relative}`);
    if (!file.startsWith(root + sep)) return undefined;
    try {
      const info = await stat(file);
      if (!info.isFile()) return undefined;
      const type = getMimeType(file) ?? "application/octet-stream";
      if (info.size >= 1024 && COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) && /\bgzip\b/i.test(acceptEncoding)) {
        const version = `${info.mtimeMs}:${info.size}`;
        let entry = compressed.get(file);
        if (entry?.version !== version) {
          entry = { version, body: new Uint8Array(await gzipped(await readFile(file))) };
          compressed.set(file, entry);
        }
        return new Response(entry.body, {
          headers: { "Content-Type": type, "Content-Encoding": "gzip", "Content-Length": String(entry.body.byteLength), Vary: "Accept-Encoding" },
        });
      }
      const body = await readFile(file);
      return new Response(body, { headers: { "Content-Type": type, "Content-Length": String(body.byteLength), Vary: "Accept-Encoding" } });
    } catch {
      return undefined;
    }
  };
}
