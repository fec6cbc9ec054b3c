import { Agent, request } from "undici";
import type { UpstreamFetch } from "../models/adapter";

/**
 * Model calls on Node over undici's kept-alive connection pools (the Agent keeps one per
 * upstream origin), with undici's `request` rather than fetch: a fetch builds a WHATWG
 * Request and Response around every call, which costs more CPU than the rest of a relay.
 * The Worker keeps the global fetch, and never imports this file.
 */
export function createUpstreamPool(): UpstreamFetch {
  // Timeouts are the service's own (the request's signal): a model may think for minutes.
  const agent = new Agent({ keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 });
  return async (url, init) => {
    const { statusCode: status, body } = await request(url, { ...init, dispatcher: agent });
    return { status, ok: status >= 200 && status < 300, json: () => body.json(), text: () => body.text(), body };
  };
}
