// Prints a new key for the service's sessions (a private ES256 JWK), for a Worker:
//   npm run -s session-key | npx wrangler secret put SESSION_SIGNING_KEY
// To rotate, put {"keys":[<new>,<old>]} for as long as access tokens signed with the old
// one may live (SESSION_ACCESS_TOKEN_SECONDS), then the new one alone.
import { exportJWK, generateKeyPair } from "jose";

const { privateKey } = await generateKeyPair("ES256", { extractable: true });
console.log(JSON.stringify({ ...(await exportJWK(privateKey)), alg: "ES256", kid: `session-${crypto.randomUUID()}` }));
