import { readFile, stat } from "node:fs/promises";
import { resolve, sep } from "node:path";
import { getMimeType } from "hono/utils/mime";
import type { AssetSource } from "./web-client";

/**
 * The web client's files from a directory (web/dist), for the Node server: only regular
 * files inside it, whatever `..` or encoded separators a path carries.
 */
export function webFilesFrom(directory: string): AssetSource {
  const root = resolve(directory);
  return async (path) => {
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
      if (!(await stat(file)).isFile()) return undefined;
      const body = await readFile(file);
      return new Response(body, {
        headers: { "Content-Type": getMimeType(file) ?? "application/octet-stream", "Content-Length": String(body.byteLength) },
      });
    } catch {
      return undefined;
    }
  };
}
