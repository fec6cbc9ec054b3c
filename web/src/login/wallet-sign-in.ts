// Sign-In with Ethereum in the browser: the wallet's account and chain, a nonce from the
// service, an EIP-4361 message naming this page's origin, the wallet's signature of it
// (personal_sign). Loaded only when a person chooses a wallet: it carries Keccak for the
// address's EIP-55 checksum, which the message must use.
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { Eip1193Provider } from "./wallet-discovery";

export interface WalletProof {
  message: string;
  signature: string;
}

/** Says what went wrong in words a person can act on; wallets' own errors are terse. */
export class WalletError extends Error {}

/** EIP-55: the address in mixed case, as Sign-In with Ethereum requires. */
function checksum(address: string): string {
  const lower = address.toLowerCase().replace(/^0x/, "");
  const hash = keccak_256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < 40; i++) out += ((hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0xf) >= 8 ? lower[i]!.toUpperCase() : lower[i];
  return out;
}

const toHex = (text: string) => `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;

async function ask<T>(provider: Eip1193Provider, method: string, params?: unknown[]): Promise<T> {
  try {
    return (await provider.request({ method, params })) as T;
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === 4001) throw new WalletError("You declined the request in your wallet. Choose the wallet again to sign in.");
    if (code === -32002) throw new WalletError("Your wallet already has a request waiting: open it to answer.");
    throw new WalletError(`The wallet refused: ${(err as { message?: string }).message ?? String(err)}`);
  }
}

/** Asks the wallet for its account, then for its signature of a sign-in message with a fresh nonce. */
export async function proveWallet(provider: Eip1193Provider): Promise<WalletProof> {
  const [account] = await ask<string[]>(provider, "eth_requestAccounts");
  if (!account || !/^0x[0-9a-fA-F]{40}$/.test(account)) throw new WalletError("The wallet shared no account: unlock it and try again.");
  const address = checksum(account);
  const chainId = Number(BigInt(await ask<string>(provider, "eth_chainId")));
  const reply = await fetch("/auth/wallet/nonce", { method: "POST", headers: { Accept: "application/json" } });
  const body = (await reply.json().catch(() => ({}))) as { nonce?: string; message?: string };
  if (!reply.ok || !body.nonce) throw new WalletError(body.message ?? `The service could not start a wallet sign-in (${reply.status}).`);
  const message = [
    `${location.host} wants you to sign in with your Ethereum account:`,
    address,
    "",
    "Sign in to Assistant Chat.",
    "",
    `URI: ${location.origin}/`,
    "Version: 1",
    `Chain ID: ${chainId}`,
    `Nonce: ${body.nonce}`,
    `Issued At: ${new Date().toISOString()}`,
  ].join("\n");
  const signature = await ask<string>(provider, "personal_sign", [toHex(message), address]);
  return { message, signature };
}
