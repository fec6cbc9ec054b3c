import { bytesToHex as nobleBytesToHex, hexToBytes as nobleHexToBytes } from "@noble/hashes/utils.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { recoverPublicKey } from "@noble/secp256k1";

// The Ethereum primitives a wallet sign-in needs at run time, and no more: Keccak-256,
// EIP-55 addresses, EIP-191 message hashes and secp256k1 public key recovery. They come
// from @noble/hashes and @noble/secp256k1 (audited, dependency-free, ~5 KiB gzipped in the
// Worker bundle together) rather than viem or ethers, which would not fit its budget
// (see BENCHMARKS.md). Tests check them against viem's own signatures.

/** The bytes of a 0x-prefixed hex string, or null when it is not one (odd length, other characters). */
export function hexToBytes(hex: string): Uint8Array | null {
  return /^0x(?:[0-9a-fA-F]{2})*$/.test(hex) ? nobleHexToBytes(hex.slice(2)) : null;
}

/** Bytes as 0x-prefixed lowercase hex. */
export function bytesToHex(bytes: Uint8Array): string {
  return `0x${nobleBytesToHex(bytes)}`;
}

/** The EIP-55 mixed-case form of a 20-byte address given as 40 hex digits (any case). */
export function checksumAddress(address: string): string {
  const lower = address.toLowerCase().replace(/^0x/, "");
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = (hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    out += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i];
  }
  return out;
}

/** Whether `address` is 0x and 40 hex digits in exactly its EIP-55 checksummed case. */
export function isChecksummedAddress(address: string): boolean {
  return /^0x[0-9a-fA-F]{40}$/.test(address) && checksumAddress(address) === address;
}

/** EIP-191 (version 0x45, personal_sign): keccak256("\x19Ethereum Signed Message:\n" + length + message). */
export function personalMessageHash(message: string): Uint8Array {
  const body = new TextEncoder().encode(message);
  const prefix = new TextEncoder().encode(`\x19Ethereum Signed Message:\n${body.length}`);
  const whole = new Uint8Array(prefix.length + body.length);
  whole.set(prefix);
  whole.set(body, prefix.length);
  return keccak_256(whole);
}

/**
 * The address whose key made this ECDSA signature of `hash`, or null when the signature is
 * not a well-formed secp256k1 signature. Takes the 65-byte r‖s‖v form wallets produce (v
 * 27/28, or 0/1) and the 64-byte EIP-2098 compact form (the parity in s's top bit).
 */
export function recoverAddress(hash: Uint8Array, signature: Uint8Array): string | null {
  let r: Uint8Array;
  let s: Uint8Array;
  let parity: number;
  if (signature.length === 65) {
    r = signature.subarray(0, 32);
    s = signature.subarray(32, 64);
    const v = signature[64]!;
    parity = v >= 27 ? v - 27 : v;
  } else if (signature.length === 64) {
    r = signature.subarray(0, 32);
    s = signature.slice(32, 64);
    parity = s[0]! >> 7;
    s[0] = s[0]! & 0x7f;
  } else {
    return null;
  }
  if (parity !== 0 && parity !== 1) return null;
  const recovered = new Uint8Array(65);
  recovered[0] = parity;
  recovered.set(r, 1);
  recovered.set(s, 33);
  let publicKey: Uint8Array;
  try {
    publicKey = recoverPublicKey(recovered, hash, { prehash: false, isCompressed: false });
  } catch {
    return null; // r or s out of range, or no point with that x
  }
  // The address is the last 20 bytes of keccak256 of the key's x‖y (without the 0x04 prefix).
  return checksumAddress(bytesToHex(keccak_256(publicKey.subarray(1)).subarray(12)));
}
