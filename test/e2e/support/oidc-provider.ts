import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";
import type { JWK } from "jose";

export interface OidcProvider {
  /** The issuer (http://127.0.0.1:<port>), also its discovery document's base. */
  issuer: string;
  clientId: string;
  /** The API the access tokens are for (their `aud`). */
  audience: string;
  /**
   * Registers the app's redirect URI; the provider is built here, once the app's origin is
   * known. `otherClients`: more public clients at the same provider (other apps), redirecting
   * to `<appOrigin>/<id>/callback`, whose access tokens are for the API `https://<id>.example`.
   */
  configure(appOrigin: string, options?: { otherClients?: string[]; signingKey?: JWK }): void;
  close(): Promise<void>;
}

/** What the provider knows about each login name its form is given. */
export const profileOf = (login: string) => ({
  name: `${login[0]?.toUpperCase()}${login.slice(1)} Example`,
  picture: `https://avatars.example.test/${login}.png`,
  email: `${login}@example.test`,
});

/**
 * A real OpenID provider (the oidc-provider package) on 127.0.0.1: its own login form (any
 * name logs in), Authorization Code + PKCE for a public client, and JWT access tokens for
 * one API audience carrying the `name` and `picture` claims.
 */
export async function startOidcProvider(): Promise<OidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => (handler ? handler(req, res) : res.writeHead(503).end()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = "web-client";
  const audience = "https://api.plant-chat.test";
  return {
    issuer,
    clientId,
    audience,
    configure(appOrigin, { otherClients = [], signingKey } = {}) {
      const client = (id: string, redirect: string) => ({
        client_id: id,
        token_endpoint_auth_method: "none",
        redirect_uris: [redirect],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      });
      const apiOf = (id: string) => (id === clientId ? audience : `https://${id}.example`);
      const provider = new Provider(issuer, {
        clients: [client(clientId, `${appOrigin}/auth/callback`), ...otherClients.map((id) => client(id, `${appOrigin}/${id}/callback`))],
        ...(signingKey ? { jwks: { keys: [signingKey] } } : {}),
        pkce: { required: () => true },
        claims: { openid: ["sub"], profile: ["name", "picture"], email: ["email"] },
        findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, ...profileOf(sub) }) }),
        extraTokenClaims: (_ctx: unknown, token: unknown) => {
          const sub = (token as { accountId?: string }).accountId;
          return sub ? { name: profileOf(sub).name, picture: profileOf(sub).picture } : undefined;
        },
        features: {
          devInteractions: { enabled: true },
          resourceIndicators: {
            enabled: true,
            defaultResource: (_ctx: unknown, c: { clientId: string }) => apiOf(c.clientId),
            useGrantedResource: () => true,
            getResourceServerInfo: (_ctx: unknown, resource: string) => ({ scope: "openid profile email", audience: resource, accessTokenFormat: "jwt", accessTokenTTL: 3600 }),
          },
        },
        cookies: { keys: ["e2e-cookie-key-not-a-secret"] },
      });
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
