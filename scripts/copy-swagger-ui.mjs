// Runs after `npm run build:web`: copies Swagger UI from the swagger-ui-dist package into
// web/dist/docs/, where the /docs page loads it from the service's own origin (no CDN).
// The page's init script is web/public/docs/init.js, which Vite copies there itself.
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const from = dirname(require.resolve("swagger-ui-dist/package.json"));
const to = fileURLToPath(new URL("../web/dist/docs/", import.meta.url));
mkdirSync(to, { recursive: true });
for (const file of ["swagger-ui-bundle.js", "swagger-ui.css"]) copyFileSync(join(from, file), join(to, file));
