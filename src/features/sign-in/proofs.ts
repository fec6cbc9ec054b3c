import type { ErrorCode } from "../../platform/error-codes";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import type { Db } from "../../platform/db";
import { DomainError } from "../../platform/errors";
import { WALLET_ISSUER } from "../../platform/auth/identity-links";
import { InvalidTokenError, KeysUnavailable, type Identity, type JwtVerifier } from "../../platform/auth/jwt";
import { LOCAL_ISSUER } from "../../platform/auth/local-login";
import type { SignInMethod } from "../../platform/auth/session-tokens";
import { parseSiweMessage, SiweFormatError, type SiweMessage } from "../../platform/auth/siwe";
import { WalletRpcUnavailable, type ContractWallets } from "../../platform/auth/wallet-contracts";
import { hexToBytes, personalMessageHash, recoverAddress } from "../../platform/auth/wallet-signature";
import { walletNonces } from "../../../schema/index";

/** Who a proof of identity shows the person to be, with what the sign-in told about them. */
export interface ProvenIdentity extends Identity {
  method: SignInMethod;
  /** What a person recognises this sign-in method by: the address, the e-mail, the name. */
  label: string;
}

/** How long a wallet nonce may wait for its signed message. */
export const NONCE_TTL_MS = 5 * 60_000;
/** How far a wallet's clock may run ahead of the service's. */
const CLOCK_SKEW_MS = 60_000;

const refused = (code: ErrorCode, message: string) => new DomainError(code, message);

/**
 * A fresh nonce for a Sign-In with Ethereum message: 128 random bits as 32 hex digits
 * (EIP-4361 asks for 8 or more letters or digits), good for NONCE_TTL_MS and one sign-in.
 * Nonces expired an hour ago go in the same batch (the daily job takes the rest).
 */
export async function issueWalletNonce(db: Db, now: Date): Promise<{ nonce: string; expiresAt: Date }> {
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  const expiresAt = new Date(now.getTime() + NONCE_TTL_MS);
  await db.batch([
    db.delete(walletNonces).where(lt(walletNonces.expiresAt, new Date(now.getTime() - 3600_000))),
    db.insert(walletNonces).values({ nonce, expiresAt }),
  ]);
  return { nonce, expiresAt };
}

export interface WalletProofOptions {
  db: Db;
  now: Date;
  /** The service's public origin, which the message must name. */
  origin: string;
  contractWallets?: ContractWallets;
}

/**
 * Checks a signed Sign-In with Ethereum message: its form (strictly EIP-4361), that it asks
 * to sign in to this service (domain, scheme and URI against the public origin), its times,
 * its signature (the address's key; else, with WALLET_RPC_URL, the contract wallet at that
 * address by ERC-1271/6492), and last its nonce, used up only by a sign-in that succeeds.
 * The identity is the checksummed address, the same on every chain.
 */
export async function proveWallet(options: WalletProofOptions, text: string, signatureHex: string): Promise<ProvenIdentity> {
  const { db, now, origin } = options;
  let message: SiweMessage;
  try {
    message = parseSiweMessage(text);
  } catch (err) {
    if (err instanceof SiweFormatError) throw refused("wallet_message_invalid", `the sign-in message is not a Sign-In with Ethereum (EIP-4361) message: ${err.message}`);
    throw err;
  }

  const service = new URL(origin);
  const here = `this service (${service.host})`;
  if (message.domain.toLowerCase() !== service.host.toLowerCase()) {
    throw refused("wallet_domain_mismatch", `the message asks to sign in to ${message.domain}, not to ${here}: sign the message this service's own page prepares`);
  }
  if (message.scheme !== undefined && `${message.scheme.toLowerCase()}:` !== service.protocol) {
    throw refused("wallet_domain_mismatch", `the message names the scheme ${message.scheme}, but ${here} is served over ${service.protocol.slice(0, -1)}`);
  }
  if (new URL(message.uri).origin !== service.origin) {
    throw refused("wallet_domain_mismatch", `the message's URI is not on ${here} (${service.origin}): sign the message this service's own page prepares`);
  }

  const t = now.getTime();
  if (message.expirationTime && message.expirationTime.getTime() <= t) {
    throw refused("wallet_message_expired", `the message expired at ${message.expirationTime.toISOString()}: sign in again to sign a new one`);
  }
  if (message.notBefore && message.notBefore.getTime() > t + CLOCK_SKEW_MS) {
    throw refused("wallet_message_expired", `the message is not valid before ${message.notBefore.toISOString()}: sign one valid now`);
  }
  if (message.issuedAt.getTime() > t + CLOCK_SKEW_MS) {
    throw refused("wallet_message_expired", "the message is issued in the future: check the device's clock, then sign in again");
  }
  if (message.issuedAt.getTime() < t - NONCE_TTL_MS - CLOCK_SKEW_MS) {
    throw refused("wallet_message_expired", `the message was issued over ${NONCE_TTL_MS / 60_000} minutes ago: sign in again to sign a new one`);
  }

  await checkSignature(options, message, text, signatureHex);

  const [used] = await db
    .update(walletNonces)
    .set({ usedAt: now })
    .where(and(eq(walletNonces.nonce, message.nonce), isNull(walletNonces.usedAt), gt(walletNonces.expiresAt, now)))
    .returning({ nonce: walletNonces.nonce });
  if (!used) {
    const [known] = await db.select().from(walletNonces).where(eq(walletNonces.nonce, message.nonce)).limit(1);
    if (!known) throw refused("wallet_nonce_unknown", "the message's nonce was not issued by this service: ask POST /auth/wallet/nonce for one and sign again");
    if (known.usedAt) throw refused("wallet_nonce_used", "this message was already used to sign in (its nonce is single-use): sign a new one");
    throw refused("wallet_nonce_expired", `the message's nonce expired (they last ${NONCE_TTL_MS / 60_000} minutes): sign in again to sign a new one`);
  }

  return { issuer: WALLET_ISSUER, subject: message.address, method: "wallet", label: message.address, wallet: message.address };
}

async function checkSignature(options: WalletProofOptions, message: SiweMessage, text: string, signatureHex: string): Promise<void> {
  const signature = hexToBytes(signatureHex);
  if (!signature || signature.length < 64) {
    throw refused("wallet_signature_invalid", "the signature must be the wallet's signature in hex (0x and at least 128 hex digits)");
  }
  const hash = personalMessageHash(text);
  if (recoverAddress(hash, signature) === message.address) return;

  const notTheKey = `the signature was not made by the key of ${message.address}: sign the message with the wallet it names`;
  const { contractWallets } = options;
  if (!contractWallets) throw refused("wallet_signature_invalid", notTheKey);
  let accepted: boolean | "no-node";
  try {
    accepted = await contractWallets.accepts(message.address, hash, signature, message.chainId);
  } catch (err) {
    if (err instanceof WalletRpcUnavailable) throw new DomainError("wallet_rpc_unavailable", err.message, { retryAfterSeconds: 10 });
    throw err;
  }
  if (accepted === "no-node") {
    throw refused("wallet_signature_invalid", `${notTheKey} (a smart-contract wallet can sign in here on the chains this service has a node for, not chain ${message.chainId})`);
  }
  if (!accepted) throw refused("wallet_signature_invalid", `the signature is neither the key's of ${message.address} nor accepted by a wallet contract at that address on chain ${message.chainId}`);
}

/**
 * A token of the configured identity provider (an OpenID Connect ID or access token, or a
 * JWKS-verified token such as Privy's, Dynamic's or Web3Auth's), verified exactly as bearer
 * tokens are; an ID token's audience is the client's (`idTokenAudience`).
 */
export async function proveProviderToken(verify: JwtVerifier, token: string, audience?: string): Promise<ProvenIdentity> {
  let identity: Identity;
  try {
    identity = await verify(token, audience === undefined ? undefined : { audience });
  } catch (err) {
    if (err instanceof InvalidTokenError) throw refused("provider_token_invalid", err.message.replace(/^the access token/, "the identity provider's token"));
    if (err instanceof KeysUnavailable) throw new DomainError("identity_provider_unavailable", err.message, { retryAfterSeconds: 10 });
    throw err;
  }
  return { ...identity, method: "provider", label: identity.email ?? identity.wallet ?? identity.name ?? identity.subject };
}

/** Local login (no identity provider, not production): the same name is the same person, as with POST /auth/local. */
export function proveLocalName(name: string): ProvenIdentity {
  return { issuer: LOCAL_ISSUER, subject: `local:${name}`, name, method: "local", label: name };
}
