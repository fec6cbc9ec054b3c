import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import type { Deps } from "../../platform/deps";
import { publicOrigin } from "../../platform/http/public-origin";
import { errorResponses } from "../../platform/http/error-responses";
import { MAX_AUDIO_BYTES, MAX_AUDIO_SECONDS } from "../../platform/speech/transcription";
import { offeredMethods } from "./session-routes";

const SignInMethodOffer = z
  .discriminatedUnion("method", [
    z.object({ method: z.literal("wallet").openapi({ description: "Sign-In with Ethereum: POST /auth/wallet/nonce, then POST /auth/session { wallet }" }) }),
    z.object({
      method: z.literal("oidc").openapi({ description: "OpenID Connect Code + PKCE at the issuer, then POST /auth/session { accessToken }" }),
      name: z.string().openapi({ example: "Example ID", description: "The provider's name for its button (AUTH_PROVIDER_NAME, else the issuer's host)" }),
      issuer: z.string().openapi({ example: "https://login.example.com/" }),
      clientId: z.string(),
      scopes: z.string().openapi({ example: "openid profile email" }),
      audience: z.string().nullable(),
    }),
    z.object({
      method: z.literal("provider-token").openapi({
        description: "POST /auth/session { idToken } or { accessToken } with a token of the identity provider (AUTH_JWKS_URL and the like), obtained by a front end or SDK of the operator's own",
      }),
      name: z.string().openapi({ example: "privy.io" }),
    }),
    z.object({ method: z.literal("local").openapi({ description: "A name: POST /auth/session { local: { name } }" }) }),
  ])
  .openapi("SignInMethodOffer");

const ClientConfigSchema = z
  .object({
    auth: z.discriminatedUnion("mode", [
      z.object({ mode: z.literal("local").openapi({ description: "Log in with a name at POST /auth/local" }) }),
      z.object({ mode: z.literal("token").openapi({ description: "The identity provider's tokens come from elsewhere (AUTH_JWKS_URL, AUTH_PUBLIC_KEY, AUTH_HS256_SECRET)" }) }),
      z.object({
        mode: z.literal("oidc"),
        issuer: z.string().openapi({ example: "https://login.example.com/" }),
        clientId: z.string(),
        scopes: z.string().openapi({ example: "openid profile email" }),
        audience: z.string().nullable().openapi({ description: "Ask the issuer for an access token for this audience" }),
      }),
    ]),
    signIn: z
      .object({
        methods: z.array(SignInMethodOffer).openapi({ description: "Every way to sign in here, one button each on the login screen" }),
        origin: z.string().openapi({
          example: "https://chat.example.com",
          description: "The service's public origin: wallet messages name it, and only a page on it can renew a session",
        }),
        unavailable: z.string().optional().openapi({ description: "Why nobody can sign in to the web client here, when that is so" }),
      })
      .openapi({ description: "How to sign in (supersedes `auth`, kept for older clients)" }),
    signUp: z
      .object({
        policy: z.enum(["open", "invite", "closed"]).openapi({ description: "Who may create an account (SIGN_UP): anyone, those with an invite code, or nobody new" }),
        turnstileSiteKey: z.string().nullable().openapi({
          description: "Cloudflare Turnstile's site key, when a new wallet or name account needs its widget's token (`turnstileToken`)",
        }),
      })
      .openapi({ description: "What creating an account needs here" }),
    transcription: z.object({
      available: z.boolean().openapi({ description: "Whether POST /audio/transcriptions has a provider" }),
      maxBytes: z.number().int(),
      maxSeconds: z.number().int(),
    }),
  })
  .openapi("ClientConfig");

const getClientConfig = createRoute({
  method: "get",
  path: "/client-config",
  tags: ["web client"],
  summary: "How the web client logs in and what it may offer (public)",
  responses: {
    200: { description: "The client's settings", content: { "application/json": { schema: ClientConfigSchema } } },
    ...errorResponses(),
  },
});

export const clientConfigRoutes = createRouter().openapi(getClientConfig, (c) => {
  const deps = c.get("deps");
  const { config, transcriber } = deps;
  // `auth` is what older clients read: the OpenID issuer, local login, or tokens from elsewhere.
  const auth = config.AUTH_OIDC_ISSUER
    ? {
        mode: "oidc" as const,
        issuer: config.AUTH_OIDC_ISSUER,
        clientId: config.AUTH_OIDC_CLIENT_ID ?? "",
        scopes: config.AUTH_OIDC_SCOPES,
        audience: config.AUTH_OIDC_AUDIENCE ?? null,
      }
    : deps.localLogin
      ? { mode: "local" as const }
      : { mode: "token" as const };
  return c.json(
    {
      auth,
      signIn: signInOffers(deps),
      signUp: { policy: config.SIGN_UP, turnstileSiteKey: config.TURNSTILE_SITE_KEY ?? null },
      transcription: { available: Boolean(transcriber), maxBytes: MAX_AUDIO_BYTES, maxSeconds: MAX_AUDIO_SECONDS },
    },
    200,
  );
});

function signInOffers(deps: Deps) {
  const origin = publicOrigin(deps);
  if (!deps.sessionTokens) {
    return { methods: [], origin, unavailable: "Sign-in is not configured on this server: its operator must set SESSION_SIGNING_KEY." };
  }
  const { config } = deps;
  const offered = offeredMethods(deps);
  const methods: Array<z.infer<typeof SignInMethodOffer>> = [];
  if (offered.wallet) methods.push({ method: "wallet" });
  if (offered.provider && config.AUTH_OIDC_ISSUER) {
    methods.push({
      method: "oidc",
      name: config.AUTH_PROVIDER_NAME ?? new URL(config.AUTH_OIDC_ISSUER).host,
      issuer: config.AUTH_OIDC_ISSUER,
      clientId: config.AUTH_OIDC_CLIENT_ID ?? "",
      scopes: config.AUTH_OIDC_SCOPES,
      audience: config.AUTH_OIDC_AUDIENCE ?? null,
    });
  } else if (offered.provider) {
    const name = config.AUTH_PROVIDER_NAME ?? config.AUTH_ISSUER ?? (config.AUTH_JWKS_URL ? new URL(config.AUTH_JWKS_URL).host : "the identity provider");
    methods.push({ method: "provider-token", name });
  }
  if (offered.local) methods.push({ method: "local" });
  return { methods, origin };
}
