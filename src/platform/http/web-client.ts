import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import type { Config } from "../config";
import type { AppEnv } from "../deps";

/** Where Cloudflare Turnstile's widget comes from (its script, and the frame it draws in). */
export const TURNSTILE_ORIGIN = "https://challenges.cloudflare.com";

/**
 * The client's own routes (deep links that must survive a reload). The Admin area's sit
 * under /admin beside the console's API, on paths the API does not serve (its Usage tab is
 * /admin/usage-report, since GET /admin/usage is the report itself).
 */
const CLIENT_ROUTE =
  /^\/(?:c\/[^/]+|settings(?:\/[^/]+)?|s\/[^/]+|archived|login|auth\/callback|admin(?:\/(?:people(?:\/[^/]+)?|usage-report|invite-codes|audit-log))?)?\/?$/;

/**
 * Which copy of the client's page to answer an address with (web/vite-route-pages.ts builds
 * one per kind, each naming the code that kind of page loads as it starts, so that the browser
 * asks for it at once): the login screen, the signed-in app's chat or its settings, or the
 * share page; undefined for the others (the page that names only the entry). The signed-in
 * app's addresses show the login screen to a browser without the client's `signed_in` cookie
 * (never signed in here, or signed out). Only a hint: each page loads what it needs anyway.
 */
export function pageKind(path: string, signedIn: boolean): "login" | "chat" | "settings" | "share" | undefined {
  if (/^\/s\/[^/]+\/?$/.test(path)) return "share";
  if (/^\/login\/?$/.test(path)) return "login";
  const chat = path === "/" || /^\/c\/[^/]+\/?$/.test(path);
  const settings = /^\/settings(?:\/[^/]+)?\/?$/.test(path);
  if (!chat && !settings) return undefined;
  if (!signedIn) return "login";
  return chat ? "chat" : "settings";
}

/**
 * The headers of every HTML page the service serves: no inline script, nothing from a
 * third-party origin except the identity provider the browser logs in at and the avatar
 * hosts (AVATAR_HOSTS). Images from anywhere else are not loaded, whatever a reply says.
 */
export function htmlSecurityHeaders(config: Config): Record<string, string> {
  const issuer = config.AUTH_OIDC_ISSUER ? ` ${new URL(config.AUTH_OIDC_ISSUER).origin}` : "";
  // Cloudflare Turnstile's widget (a script and its frame), only where it is configured.
  const turnstile = config.TURNSTILE_SITE_KEY ? ` ${TURNSTILE_ORIGIN}` : "";
  return {
    "Content-Security-Policy": [
      "default-src 'self'",
      `script-src 'self'${turnstile}`,
      ...(turnstile ? [`frame-src${turnstile}`] : []),
      "style-src 'self'",
      `img-src 'self' data: blob:${config.AVATAR_HOSTS.map((host) => ` ${host}`).join("")}`,
      "media-src 'self' blob:",
      `connect-src 'self'${issuer}`,
      `form-action 'self'${issuer}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "object-src 'none'",
    ].join("; "),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
  };
}

/**
 * A file's reply with the caching the client's build calls for: hashed files forever, the
 * rest revalidated. Made with c.body(), so it carries the headers every reply does (the
 * request id, CORS).
 */
function fileReply(c: Context<AppEnv>, path: string, file: Response): Response {
  const headers: Record<string, string> = {};
  for (const name of ["Content-Type", "Content-Length", "Content-Encoding", "ETag", "Last-Modified"]) {
    const value = file.headers.get(name);
    if (value) headers[name] = value;
  }
  const vary = file.headers.get("Vary");
  if (vary) c.header("Vary", vary, { append: true });
  headers["Cache-Control"] = path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache";
  headers["X-Content-Type-Options"] = "nosniff";
  if (headers["Content-Type"]?.startsWith("text/html")) Object.assign(headers, htmlSecurityHeaders(c.get("deps").config));
  const body = c.req.method === "HEAD" ? null : file.body;
  return body === null ? c.body(null, 200, headers) : c.body(body, 200, headers);
}

/** A GET or HEAD of a file the client's build holds, or undefined. */
export async function serveClientFile(c: Context<AppEnv>): Promise<Response | undefined> {
  const assets = c.get("deps")?.assets;
  if (!assets || (c.req.method !== "GET" && c.req.method !== "HEAD") || c.req.path.endsWith("/")) return undefined;
  const file = await assets(c.req.path, c.req.header("Accept-Encoding"));
  return file && fileReply(c, c.req.path, file);
}

/**
 * The client's index.html for a browser navigation (GET/HEAD accepting text/html) to a
 * client route or to any path outside the API's resources, so deep links survive a reload;
 * undefined for everything else, which stays the API's JSON. `apiSegments` holds the first
 * path segment of every API route (`plants`, `v1`, ...).
 */
export async function serveClientPage(c: Context<AppEnv>, apiSegments: ReadonlySet<string>): Promise<Response | undefined> {
  const assets = c.get("deps")?.assets;
  if (!assets || (c.req.method !== "GET" && c.req.method !== "HEAD")) return undefined;
  if (!(c.req.header("Accept") ?? "").includes("text/html")) return undefined;
  const path = c.req.path;
  if (!CLIENT_ROUTE.test(path) && apiSegments.has(path.split("/")[1] ?? "")) return undefined;
  const encoding = c.req.header("Accept-Encoding");
  const kind = pageKind(path, getCookie(c, "signed_in") === "1");
  // index.html is the same page without the hints (and all there is in a build without them).
  const page = (kind && (await assets(`/pages/${kind}.html`, encoding))) || (await assets("/index.html", encoding));
  if (page) {
    // Which copy depends on the cookie: a shared cache must keep them apart.
    c.header("Vary", "Cookie", { append: true });
    return fileReply(c, "/index.html", page);
  }
  return c.html(
    "<!doctype html><title>Web client not built</title><h1>The web client is not built</h1>" +
      "<p>Run <code>npm run build:web</code> (or set WEB_DIST_DIR to a built client) and reload. The API answers as usual.</p>",
    503,
    { ...htmlSecurityHeaders(c.get("deps").config), "Cache-Control": "no-store" },
  );
}
