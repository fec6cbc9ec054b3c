import type { Deps } from "../deps";

/**
 * The service's own public origin: PUBLIC_BASE_URL's, else the one the entry vouches for
 * (the Node server's own address, the Worker's request URL), never a request's Host header
 * on Node. Share links point at it; wallet messages and cookie-carrying requests must name
 * it; the service's session tokens are issued for it.
 */
export function publicOrigin(deps: Pick<Deps, "config" | "baseUrl">): string {
  return new URL(deps.config.PUBLIC_BASE_URL ?? deps.baseUrl ?? `http://localhost:${deps.config.PORT}`).origin;
}
