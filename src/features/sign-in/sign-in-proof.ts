import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv, Deps } from "../../platform/deps";
import { statusOf } from "../../platform/error-codes";
import { DomainError, excerpt } from "../../platform/errors";
import { DisplayName } from "../../platform/http/display-name";
import { publicOrigin } from "../../platform/http/public-origin";
import { countFailedAuthentication } from "../../platform/auth/credentials";
import { clientKey, isLoopback } from "../../platform/auth/rate-limit";
import { proveLocalName, proveProviderToken, proveWallet, type ProvenIdentity } from "./proofs";
import type { SignUpRequest } from "./sign-up";

// ---------------------------------------------------------------------------------------
// Proving who signs in, at the HTTP edge: the proof schemas the sign-in routes take
// (POST /auth/session, linking a method, local login), checking a proof with the methods
// this deployment offers, and the limits on sign-ins. The routes import this; no route
// imports another.
// ---------------------------------------------------------------------------------------

const Token = z.string().min(1).max(65_536);

const WalletProof = z
  .strictObject({
    message: z.string().min(1).max(8192).openapi({ description: "The EIP-4361 message, exactly as the wallet signed it" }),
    signature: z.string().min(1).max(65_536).openapi({ description: "The wallet's signature (personal_sign), 0x-prefixed hex", example: "0x4b1f…" }),
  })
  .openapi("WalletProof");

const proofOptions = {
  wallet: z.strictObject({ wallet: WalletProof }),
  idToken: z.strictObject({ idToken: Token.openapi({ description: "An ID token of the configured identity provider" }) }),
  accessToken: z.strictObject({ accessToken: Token.openapi({ description: "An access token of the configured identity provider" }) }),
  local: z.strictObject({ local: z.strictObject({ name: DisplayName.openapi({ example: "alice" }) }) }),
};
const PROOF_SHAPES = "{ wallet: { message, signature } }, { idToken }, { accessToken } or { local: { name } }";

/** What a sign-in may bring beside its proof, for a new account (sign-up.ts). */
const signUpFields = {
  inviteCode: z.string().min(1).max(200).optional().openapi({ description: "An invite code, for a new account where sign-up is by invite (SIGN_UP=invite)" }),
  turnstileToken: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .openapi({ description: "The Cloudflare Turnstile widget's token, for a new account where Turnstile is configured (`signUp.turnstileSiteKey` in /client-config)" }),
};

/**
 * Exactly one proof of identity (with `extra`, the fields a sign-in may bring beside it). A
 * body that is none of them is told which one it looks like and what is wrong with it,
 * rather than zod's "invalid input".
 */
function proofSchema<E extends z.ZodRawShape>(extra: E) {
  const options = {
    wallet: proofOptions.wallet.extend(extra),
    idToken: proofOptions.idToken.extend(extra),
    accessToken: proofOptions.accessToken.extend(extra),
    local: proofOptions.local.extend(extra),
  };
  return z.union([options.wallet, options.idToken, options.accessToken, options.local], {
    error: (issue) => {
      const input = issue.input;
      const keys = input && typeof input === "object" && !Array.isArray(input) ? Object.keys(input).filter((k) => !(k in extra)) : [];
      const option = keys.length === 1 ? options[keys[0] as keyof typeof options] : undefined;
      if (!option) return `must be exactly one of ${PROOF_SHAPES}`;
      const problem = option.safeParse(input).error?.issues[0];
      return problem ? `${problem.path.map((p) => excerpt(String(p))).join(".")}: ${problem.message}` : `must be exactly one of ${PROOF_SHAPES}`;
    },
  });
}

const proofExample = { wallet: { message: "localhost:8787 wants you to sign in with your Ethereum account:\n0x…", signature: "0x…" } };

export const SignInProof = proofSchema({}).openapi("SignInProof", { description: `One proof of identity: ${PROOF_SHAPES}`, example: proofExample });

/** POST /auth/session's body: a proof, and for a new account what the sign-up policy asks for. */
export const SignInRequest = proofSchema(signUpFields).openapi("SignInRequest", {
  description: `One proof of identity: ${PROOF_SHAPES}; with \`inviteCode\` and \`turnstileToken\` beside it when a new account needs them`,
  example: proofExample,
});

export type Proof = { wallet: { message: string; signature: string } } | { idToken: string } | { accessToken: string } | { local: { name: string } };
export type SignInBody = Proof & { inviteCode?: string; turnstileToken?: string };


/** Runs a proof check; a refused one counts against the client's address like a bad credential. */
export async function counted<T>(c: Context<AppEnv>, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof DomainError && statusOf(err.code) === 401) await countFailedAuthentication(c);
    throw err;
  }
}

/** The sign-in methods this deployment offers. */
export function offeredMethods(deps: Deps): { wallet: boolean; provider: boolean; local: boolean } {
  return {
    wallet: deps.config.WALLET_SIGN_IN === "on",
    provider: !deps.localLogin,
    local: Boolean(deps.localLogin),
  };
}

/** Checks one proof, with the method it names offered here, and says whose it is. */
export async function proveIdentity(c: Context<AppEnv>, proof: Proof): Promise<ProvenIdentity> {
  const deps = c.get("deps");
  const offered = offeredMethods(deps);
  const notOffered = (what: string) => {
    const names = [offered.wallet && "wallet", offered.provider && "idToken or accessToken", offered.local && "local"].filter(Boolean);
    return new DomainError("sign_in_method_not_offered", `this server does not offer ${what}; it offers: ${names.join(", ") || "nothing"}`);
  };
  if ("wallet" in proof) {
    if (!offered.wallet) throw notOffered("wallet sign-in");
    const { message, signature } = proof.wallet;
    return counted(c, () =>
      proveWallet({ db: deps.db, now: deps.now(), origin: publicOrigin(deps), contractWallets: deps.contractWallets }, message, signature),
    );
  }
  if ("local" in proof) {
    if (!offered.local) throw notOffered("local login");
    refuseRemoteLocalLogin(c);
    return proveLocalName(proof.local.name);
  }
  if (!offered.provider) throw notOffered("an identity provider (it runs in local-login mode)");
  if ("idToken" in proof) {
    // An ID token is for the client (OpenID Connect: the client id), not for the API.
    const audience = deps.config.AUTH_OIDC_ISSUER ? deps.config.AUTH_OIDC_CLIENT_ID : deps.config.AUTH_AUDIENCE;
    return counted(c, () => proveProviderToken(deps.verifyJwt, proof.idToken, audience));
  }
  return counted(c, () => proveProviderToken(deps.verifyJwt, proof.accessToken));
}

/**
 * Local login takes a bare name as proof, so it is for this machine only: a name from any
 * other address is refused unless the operator set LOCAL_LOGIN=network. A request from no
 * socket (in-process: tests) has no address and is not refused. Behind a reverse proxy on
 * this machine, every client looks like loopback unless CLIENT_IP_HEADER names the proxy's header.
 */
export function refuseRemoteLocalLogin(c: Context<AppEnv>): void {
  const deps = c.get("deps");
  if (deps.config.LOCAL_LOGIN === "network") return;
  const address = deps.clientAddress?.(c);
  if (address === undefined || isLoopback(address)) return;
  throw new DomainError(
    "local_login_loopback_only",
    "signing in with a name works only on the machine this server runs on (it has no identity provider): open it there, or ask its operator to set LOCAL_LOGIN=network or configure an identity provider",
  );
}

/**
 * Counts a successful sign-in against the client's address and the identity: past either
 * limit (SIGN_INS_PER_*_PER_MINUTE; on Workers the SIGN_IN_*_LIMITER bindings) it is refused,
 * 429 with Retry-After. Proofs that fail are limited apart (AUTH_FAILURES_PER_MINUTE).
 */
export async function countSignIn(c: Context<AppEnv>, identity: { issuer: string; subject: string }): Promise<void> {
  const { signInLimiters, clientAddress, now } = c.get("deps");
  const address = clientAddress?.(c);
  const at = now();
  const [byAddress, byIdentity] = await Promise.all([
    address ? signInLimiters.address.take(`sign-in:${clientKey(address)}`, at) : { ok: true as const },
    signInLimiters.identity.take(`sign-in:${identity.issuer}\u0000${identity.subject}`, at),
  ]);
  const refused = !byAddress.ok ? byAddress : !byIdentity.ok ? byIdentity : undefined;
  if (!refused) return;
  throw new DomainError(
    "too_many_sign_ins",
    `too many sign-ins ${!byAddress.ok ? "from this address" : "to this account"} in the last minute: retry in ${refused.retryAfterSeconds} s (a signed-in page renews its session without signing in again)`,
    { retryAfterSeconds: refused.retryAfterSeconds },
  );
}

/** What a new account needs from this request (sign-up.ts). */
export function signUpRequestOf(c: Context<AppEnv>, body: { inviteCode?: string; turnstileToken?: string }): SignUpRequest {
  return { clientAddress: c.get("deps").clientAddress?.(c), inviteCode: body.inviteCode, turnstileToken: body.turnstileToken };
}

