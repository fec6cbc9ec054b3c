import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness";

// The Node server as `npm start` serves it (src/server.ts serveNode), spoken to by real
// clients on 127.0.0.1: a pooled keep-alive agent and a raw socket.

let h: Harness;
let base: URL;
let alice: string;
beforeAll(async () => {
  h = await createHarness();
  base = new URL(await h.listen());
  alice = await h.signIn("alice");
});
afterAll(() => h.close());

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

/** One request through `agent`, with the body written in chunks when it is an array. */
function send(agent: Agent, path: string, init: { method?: string; headers?: Record<string, string>; body?: Buffer | Buffer[] } = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path, method: init.method ?? "GET", headers: init.headers, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body, reusedSocket: req.reusedSocket }));
      res.on("error", reject);
    });
    req.on("error", reject);
    // The server may answer 413 before it has read the body; a write into a socket it then
    // closed is the failure under test, reported by the next request, not here.
    req.on("close", () => undefined);
    if (Array.isArray(init.body)) {
      for (const chunk of init.body) req.write(chunk);
      req.end();
    } else {
      req.end(init.body);
    }
  });
}

/** After a 413, the same pool's next request must succeed: on that socket, or on a new one if the 413 said so. */
async function expectPoolStillServes(agent: Agent, refused: Answer) {
  expect(refused.status).toBe(413);
  expect(JSON.parse(refused.body)).toEqual({ error: 413, message: expect.stringMatching(/limit/) });
  const next = await send(agent, "/plants", { headers: { Authorization: `Bearer ${alice}` } });
  expect(next.status).toBe(200);
  if (refused.headers.connection !== "close") expect(next.reusedSocket).toBe(true);
}

describe("a body over the limit", () => {
  const big = Buffer.alloc(2 * 1024 * 1024, "a");
  const headers = { Authorization: "", "Content-Type": "application/json" };

  it("answers 413 and leaves a pooled keep-alive connection usable (Content-Length)", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await send(agent, "/plants", { method: "POST", headers: { ...headers, Authorization: `Bearer ${alice}` }, body: big });
      await expectPoolStillServes(agent, refused);
    } finally {
      agent.destroy();
    }
  });

  it("answers 413 and leaves a pooled keep-alive connection usable (chunked)", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const chunks = Array.from({ length: 32 }, () => big.subarray(0, 64 * 1024));
      const refused = await send(agent, "/plants", {
        method: "POST",
        headers: { ...headers, Authorization: `Bearer ${alice}`, "Transfer-Encoding": "chunked" },
        body: chunks,
      });
      await expectPoolStillServes(agent, refused);
    } finally {
      agent.destroy();
    }
  });
});
