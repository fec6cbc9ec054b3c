import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type Siteverify = Awaited<ReturnType<typeof startSiteverify>>;

/** A stand-in for Cloudflare's siteverify on 127.0.0.1, as its documentation describes it. */
export async function startSiteverify(secret: string) {
  const issued = new Set<string>();
  const seen: Array<Record<string, string>> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      // The request: POST, form-encoded or JSON, with secret, response, remoteip (and idempotency_key).
      const text = Buffer.concat(chunks).toString("utf8");
      const fields: Record<string, string> = (req.headers["content-type"] ?? "").includes("application/json")
        ? (JSON.parse(text) as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(text));
      seen.push(fields);
      const reply = (body: object) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.method !== "POST") return reply({ success: false, "error-codes": ["bad-request"] });
      if (!fields.secret) return reply({ success: false, "error-codes": ["missing-input-secret"] });
      if (fields.secret !== secret) return reply({ success: false, "error-codes": ["invalid-input-secret"] });
      if (!fields.response) return reply({ success: false, "error-codes": ["missing-input-response"] });
      if (!issued.has(fields.response)) return reply({ success: false, "error-codes": [fields.response.startsWith("used-") ? "timeout-or-duplicate" : "invalid-input-response"] });
      issued.delete(fields.response);
      issued.add(`used-${fields.response}`);
      return reply({ success: true, "error-codes": [], challenge_ts: new Date().toISOString(), hostname: "localhost", action: "", cdata: "" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/turnstile/v0/siteverify`,
    /** A token as the widget would hand the browser once a person passed. */
    solve: () => {
      const token = `XXXX.DUMMY.TOKEN.${crypto.randomUUID()}`;
      issued.add(token);
      return token;
    },
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

