import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../platform/http/router";
import { errorResponses } from "../../platform/http/error-responses";
import { MAX_AUDIO_BYTES, MAX_AUDIO_SECONDS } from "../../platform/speech/transcription";

const ClientConfigSchema = z
  .object({
    auth: z.discriminatedUnion("mode", [
      z.object({ mode: z.literal("local").openapi({ description: "Log in with a name at POST /auth/local" }) }),
      z.object({
        mode: z.literal("oidc"),
        issuer: z.string().openapi({ example: "https://login.example.com/" }),
        clientId: z.string(),
        scopes: z.string().openapi({ example: "openid profile email" }),
        audience: z.string().nullable().openapi({ description: "Ask the issuer for an access token for this audience" }),
      }),
    ]),
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
  const { config, transcriber } = c.get("deps");
  // Without an OpenID issuer the browser logs in locally (POST /auth/local); when a bare
  // JWKS or key is configured instead, that endpoint answers 404 and the client says so.
  const auth = config.AUTH_OIDC_ISSUER
    ? {
        mode: "oidc" as const,
        issuer: config.AUTH_OIDC_ISSUER,
        clientId: config.AUTH_OIDC_CLIENT_ID ?? "",
        scopes: config.AUTH_OIDC_SCOPES,
        audience: config.AUTH_OIDC_AUDIENCE ?? null,
      }
    : { mode: "local" as const };
  return c.json(
    {
      auth,
      transcription: { available: Boolean(transcriber), maxBytes: MAX_AUDIO_BYTES, maxSeconds: MAX_AUDIO_SECONDS },
    },
    200,
  );
});
