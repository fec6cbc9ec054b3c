import { Hono } from "hono";
import type { AppEnv } from "../../platform/deps";
import { htmlSecurityHeaders } from "../../platform/http/web-client";

// Swagger UI's files come from the service itself (web/dist/docs/, copied from swagger-ui-dist
// by `npm run build:web`), and its start-up is a file too: the page has no inline script and
// no third-party origin, under the web client's Content-Security-Policy.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plant Store and Assistant Chat: API</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

/** GET /docs: the OpenAPI document at /openapi.json, rendered. */
export const docsRoutes = new Hono<AppEnv>().get("/docs", (c) =>
  c.html(PAGE, 200, { ...htmlSecurityHeaders(c.get("deps").config), "Cache-Control": "no-cache" }),
);
