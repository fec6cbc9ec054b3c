import { z } from "@hono/zod-openapi";
import { base64url } from "jose";
import { encodeBase64url } from "../encoding";
import { parseInt64 } from "./int64";
import type { Position } from "../db";
import { intQuery } from "./query";

/** Cursors this service gives out: base64url, so they travel in a query string as they are. */
const CURSOR_PATTERN = "^[A-Za-z0-9_-]{0,200}$";
const CURSOR_MESSAGE = "must be the nextCursor of a previous page (or empty for the first page)";

/** An opaque cursor for a keyset position (a time and the id that breaks its ties). */
export function encodeCursor(position: Position): string {
  return encodeBase64url(new TextEncoder().encode(`${position.at}.${position.id}`));
}

/** The position a cursor holds, or null when it is not one this service gave out. */
export function decodeCursor(cursor: string): Position | null {
  if (!new RegExp(CURSOR_PATTERN).test(cursor)) return null;
  let text: string;
  try {
    text = new TextDecoder().decode(base64url.decode(cursor));
  } catch {
    return null;
  }
  const match = /^(\d{1,15})\.([\w-]{1,100})$/.exec(text);
  return match ? { at: Number(match[1]), id: match[2]! } : null;
}

/**
 * The `cursor` query parameter, decoded into a position. Absent and empty (`cursor=`, as
 * clients that always send the parameter do) both mean the first page.
 */
const positionCursor = z
  .string()
  .optional()
  .transform((text, ctx): Position | undefined => {
    if (text === undefined || text === "") return undefined;
    const position = decodeCursor(text);
    if (position) return position;
    ctx.addIssue({ code: "custom", message: CURSOR_MESSAGE });
    return z.NEVER;
  })
  .openapi({
    type: "string",
    maxLength: 200,
    pattern: CURSOR_PATTERN,
    description: "`nextCursor` of the previous page; absent or empty for the first page",
  });

/**
 * The plants' cursor: the id of the last plant of the previous page, as the `Link` header
 * gives it. Empty means the first page, as above.
 */
const plantCursor = z
  .string()
  .optional()
  .transform((text, ctx): bigint | undefined => {
    if (text === undefined || text === "") return undefined;
    const id = parseInt64(text);
    if (id !== null) return id;
    ctx.addIssue({ code: "custom", message: "must be the cursor of a Link rel=next header: a plant id (int64), or empty for the first page" });
    return z.NEVER;
  })
  .openapi({
    type: "string",
    pattern: "^(-?[0-9]{1,19})?$",
    description: "From the `Link: rel=next` header of the previous page; absent or empty for the first page",
  });

/** `limit` (1..max, `fallback` when absent) and `cursor` for a keyset-paged list. */
export function pageQuery(max: number, fallback: number) {
  return z.object({ limit: intQuery(1, max, fallback, "Items per page"), cursor: positionCursor });
}

/** The same for plants, whose cursor is a plant id. */
export function plantPageQuery(max: number, fallback: number) {
  return z.object({ limit: intQuery(1, max, fallback, "Items per page"), cursor: plantCursor });
}
