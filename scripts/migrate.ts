// npm run db:migrate: applies migrations/ to DATABASE_URL (a Turso/libSQL URL, or a file),
// with DATABASE_AUTH_TOKEN. The Node server does the same at boot; the Worker does not.
import { openDatabase } from "../src/platform/node/open-database";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error("set DATABASE_URL (e.g. libsql://<db>-<org>.turso.io) and DATABASE_AUTH_TOKEN");
  process.exit(2);
}
const { client } = await openDatabase(url, process.env.DATABASE_AUTH_TOKEN);
client.close();
console.log(`migrations applied to ${url.replace(/\?.*$/, "")}`);
