// Prints a local-login access token for the Node server: npm run token -- <name> [ttl-hours]
import { signLocalToken } from "../src/platform/auth/local-login";
import { loadOrCreateLocalKey, localKeyFile } from "../src/platform/node/local-login-key";

const name = process.argv[2] ?? "dev";
const hours = Number(process.argv[3] ?? 24);
if (!/^[\w.@-]{1,64}$/.test(name) || !(hours > 0)) {
  console.error("usage: npm run token -- <name> [ttl-hours]   (name: letters, digits, . _ @ -)");
  process.exit(2);
}
const key = await loadOrCreateLocalKey(localKeyFile(process.env.DATABASE_URL));
console.log((await signLocalToken(key, name, Math.round(hours * 3600))).token);
