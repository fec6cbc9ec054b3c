import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage, type CreateSiweMessageParameters } from "viem/siwe";
import type { Harness } from "./harness";

/** A fresh secp256k1 key, as a wallet holds one (viem's local account: it signs in Node). */
export const newWallet = () => privateKeyToAccount(generatePrivateKey());

/** The public origin of a harness without PUBLIC_BASE_URL, which wallet messages must name. */
export const HARNESS_ORIGIN = "http://localhost:8787";

/** A nonce from the service under test. */
export async function walletNonce(h: Pick<Harness, "request">): Promise<string> {
  const res = await h.request("/auth/wallet/nonce", { method: "POST" });
  if (res.status !== 200) throw new Error(`POST /auth/wallet/nonce answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { nonce: string }).nonce;
}

/** A real EIP-4361 message (viem's createSiweMessage) for this service, with a fresh nonce unless given. */
export async function siweMessage(
  h: Pick<Harness, "request" | "clock">,
  address: `0x${string}`,
  overrides: Partial<CreateSiweMessageParameters> = {},
): Promise<string> {
  const origin = new URL(HARNESS_ORIGIN);
  return createSiweMessage({
    domain: origin.host,
    address,
    statement: "Sign in to Assistant Chat.",
    uri: `${origin.origin}/`,
    version: "1",
    chainId: 1,
    nonce: overrides.nonce ?? (await walletNonce(h)),
    issuedAt: h.clock.now(),
    ...overrides,
  });
}

/** POST /auth/session with a wallet proof. */
export function postWalletProof(h: Pick<Harness, "request">, message: string, signature: string, headers: Record<string, string> = {}) {
  return h.request("/auth/session", { method: "POST", json: { wallet: { message, signature } }, headers });
}
