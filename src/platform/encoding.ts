import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { base64url } from "jose";

/** base64url without padding, for ids, tokens and keys. */
export const encodeBase64url = (bytes: Uint8Array): string => base64url.encode(bytes);

/** Bytes as lowercase hex digits. */
export const hex = (bytes: Uint8Array): string => bytesToHex(bytes);

/** A random identifier: `prefix_` then `bytes` random bytes, base64url (16 bytes = 128 bits). */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}_${encodeBase64url(randomBytes(bytes))}`;
}

/** The base64url alphabet in ASCII order, so that text comparison orders what it encodes. */
const SORTED_BASE64URL = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

/**
 * An identifier that sorts by creation time: `prefix_`, the time in ms (8 characters), then
 * 84 random bits (14 characters), all from the base64url alphabet, so it looks like a
 * randomId. Rows written many times a second (messages, usage records, holds) are indexed
 * by id: random ids put each insert on a different page of the index, time-ordered ones on
 * the last, which is what a busy database's commits mostly write.
 */
export function timeOrderedId(prefix: string, at: number = Date.now()): string {
  let id = "";
  for (let i = 0, t = at; i < 8; i++, t = Math.floor(t / 64)) id = SORTED_BASE64URL[t % 64] + id;
  const random = randomBytes(14);
  for (let i = 0; i < 14; i++) id += SORTED_BASE64URL[random[i]! & 63];
  return `${prefix}_${id}`;
}

// Random bytes are drawn a block at a time (as Node's randomUUID does): a getRandomValues
// call costs about 3 µs whether it fills 16 bytes or 4 KiB, and a chat message takes four
// ids. Each byte is handed out once.
const pool = new Uint8Array(4096);
let poolAt = pool.length;

function randomBytes(count: number): Uint8Array {
  if (count > pool.length) return crypto.getRandomValues(new Uint8Array(count));
  if (poolAt + count > pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool.subarray(poolAt, (poolAt += count));
}

const utf8 = new TextEncoder();

/**
 * SHA-256 of the text's UTF-8, as hex. Synchronous (@noble/hashes): every API-key request
 * and chat message hashes a few short strings, and crypto.subtle.digest's round trip to the
 * thread pool cost about 30 µs of CPU each where this costs a few.
 */
export function sha256Hex(text: string): string {
  return hex(sha256(utf8.encode(text)));
}
