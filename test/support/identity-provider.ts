import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";

export interface IdentityProvider {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** How many times the JWKS was fetched. */
  jwksHits(): number;
  /** How many times the OpenID discovery document was fetched. */
  discoveryHits(): number;
  /** Makes the discovery document answer 503 (false) or work again (true). */
  setDiscoveryUp(up: boolean): void;
  /** How the JWKS endpoint behaves: serves its keys, answers 503, or never answers. */
  setJwksMode(mode: "up" | "down" | "hang"): void;
  /** A second signing key, with its own kid, which the JWKS serves from now on too. */
  rotateIn(): Promise<{ sign(sub: string, claims?: JWTPayload): Promise<string> }>;
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** A valid access token for `sub`, with extra claims and header/expiry tweaks. */
  sign(sub: string, claims?: JWTPayload, options?: { expiresIn?: string | number; kid?: string }): Promise<string>;
  close(): Promise<void>;
}

/**
 * A real identity provider's key endpoint on 127.0.0.1: an ES256 key pair whose public half
 * is served as a JWKS, and a signer for tokens as Privy/Dynamic/Web3Auth would issue them.
 */
export async function startIdentityProvider(): Promise<IdentityProvider> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = "test-key-1";
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  let hits = 0;
  let discoveryHits = 0;
  let discoveryUp = true;
  let jwksMode: "up" | "down" | "hang" = "up";
  const served: JWK[] = [publicJwk];
  const server: Server = createServer((req, res) => {
    // OpenID Connect discovery, as any provider serves it under its issuer.
    if (req.url === "/.well-known/openid-configuration") {
      discoveryHits++;
      if (!discoveryUp) return void res.writeHead(503).end();
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          issuer: `${origin}/`,
          jwks_uri: `${origin}/.well-known/jwks.json`,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          response_types_supported: ["code"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["ES256"],
        }),
      );
      return;
    }
    if (req.url === "/.well-known/jwks.json") {
      hits++;
      if (jwksMode === "hang") return; // the connection stays open, unanswered
      if (jwksMode === "down") return void res.writeHead(503).end();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: served }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}/`;
  const audience = "plant-chat-test";

  return {
    issuer,
    audience,
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    jwksHits: () => hits,
    discoveryHits: () => discoveryHits,
    setDiscoveryUp: (up) => void (discoveryUp = up),
    setJwksMode: (mode) => void (jwksMode = mode),
    async rotateIn() {
      const next = await generateKeyPair("ES256", { extractable: true });
      const nextKid = `test-key-${served.length + 1}`;
      served.push({ ...(await exportJWK(next.publicKey)), kid: nextKid, alg: "ES256", use: "sig" });
      return {
        sign: (sub, claims = {}) =>
          new SignJWT(claims)
            .setProtectedHeader({ alg: "ES256", kid: nextKid, typ: "JWT" })
            .setIssuer(issuer)
            .setAudience(audience)
            .setSubject(sub)
            .setIssuedAt()
            .setExpirationTime("1h")
            .sign(next.privateKey),
      };
    },
    privateKey,
    publicJwk,
    sign: (sub, claims = {}, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "ES256", kid: options.kid ?? kid, typ: "JWT" })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? "1h")
        .sign(privateKey),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a hanging JWKS request must not keep it open
      }),
  };
}
