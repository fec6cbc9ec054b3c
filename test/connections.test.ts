import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
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
  expect(JSON.parse(refused.body)).toEqual({ error: 413, message: expect.stringMatching(/limit/), code: "body_too_large" });
  const next = await send(agent, "/plants", { headers: { Authorization: `Bearer ${alice}` } });
  expect(next.status).toBe(200);
  if (refused.headers.connection !== "close") expect(next.reusedSocket).toBe(true);
}

/** Writes `raw` (in parts, if an array) on a fresh socket and reads until the server closes it (or `until` is seen). */
function exchange(raw: string | Array<string | Buffer>, until?: RegExp) {
  return new Promise<{ status: number; headers: Record<string, string>; body: string; closed: boolean }>((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname);
    let data = "";
    let closed = false;
    const finish = () => {
      const split = data.indexOf("\r\n\r\n");
      const head = data.slice(0, split).split("\r\n");
      const headers = Object.fromEntries(
        head.slice(1).map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(head[0]?.split(" ")[1]), headers, body: data.slice(split + 4), closed });
    };
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      data += chunk;
      if (until?.test(data)) {
        socket.destroy();
        finish();
      }
    });
    socket.on("end", () => (closed = true));
    socket.on("close", () => finish());
    // The server may close before the whole request is written: that is an answer too.
    socket.on("error", (err: NodeJS.ErrnoException) => (err.code === "ECONNRESET" || err.code === "EPIPE" ? undefined : reject(err)));
    for (const part of [raw].flat()) socket.write(part);
  });
}

const host = () => `Host: ${base.host}\r\n`;

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

  // A client that writes its whole body before it reads (Node's fetch, a raw socket) must
  // still get the reply: the rest of the body is read and dropped, not cut off by a reset.
  const fiveMb = Buffer.alloc(5 * 1024 * 1024, "a");
  const chunksOf = (bytes: Buffer, size = 64 * 1024) => Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
  const tries = 5;

  it("answers a 5 MB body with a 413 that Node's fetch receives, of declared length and chunked", async () => {
    // In a process of its own, as a client is: in the server's process, its writes and the
    // server's reads take turns on one event loop, which hides the failure.
    const client = `
      const [url, token, tries] = process.argv.slice(1);
      const body = Buffer.alloc(5 * 1024 * 1024, "a");
      const chunked = () => new ReadableStream({ start(c) { for (let i = 0; i < body.length; i += 65536) c.enqueue(body.subarray(i, i + 65536)); c.close(); } });
      const outcomes = [];
      for (const framing of ["declared", "chunked"]) {
        for (let i = 0; i < Number(tries); i++) {
          try {
            const res = await fetch(url, { method: "POST", headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" }, body: framing === "chunked" ? chunked() : body, duplex: "half" });
            outcomes.push(framing + " " + res.status + " " + (await res.json()).code);
          } catch (err) {
            outcomes.push(framing + " " + (err.cause?.code ?? err.message));
          }
        }
      }
      console.log(JSON.stringify(outcomes));`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", client, new URL("/plants", base).href, alice, String(tries)]);
    const outcomes = JSON.parse(stdout) as string[];
    expect(outcomes).toEqual([...Array(tries).fill("declared 413 body_too_large"), ...Array(tries).fill("chunked 413 body_too_large")]);
  });

  it("answers a 5 MB body with a 413 that curl receives, of declared length and chunked", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plant-chat-body-"));
    const file = join(dir, "body.json");
    writeFileSync(file, fiveMb);
    try {
      for (const framing of [[], ["-H", "Transfer-Encoding: chunked"]]) {
        for (let i = 0; i < tries; i++) {
          const { stdout } = await promisify(execFile)("curl", [
            "-sS", "-X", "POST", new URL("/plants", base).href,
            "-H", `Authorization: Bearer ${alice}`, "-H", "Content-Type: application/json", ...framing,
            "--data-binary", `@${file}`, "-w", "\n%{http_code}",
          ]);
          const [body, status] = stdout.split("\n");
          expect([framing.length > 0, status]).toEqual([framing.length > 0, "413"]);
          expect(JSON.parse(body!)).toMatchObject({ error: 413, code: "body_too_large" });
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("answers a 5 MB body written whole on a raw socket with a 413, and serves the connection's next request", async () => {
    const head = `POST /plants HTTP/1.1\r\n${host()}Authorization: Bearer ${alice}\r\nContent-Type: application/json\r\n`;
    const next = `GET /health HTTP/1.1\r\n${host()}Connection: close\r\n\r\n`;
    const framings = {
      declared: [`${head}Content-Length: ${fiveMb.length}\r\n\r\n`, fiveMb, next],
      chunked: [`${head}Transfer-Encoding: chunked\r\n\r\n`, ...chunksOf(fiveMb).flatMap((c) => [`${c.length.toString(16)}\r\n`, c, "\r\n"]), "0\r\n\r\n", next],
    };
    for (const [framing, parts] of Object.entries(framings)) {
      for (let i = 0; i < tries; i++) {
        const answer = await exchange(parts);
        expect([framing, answer.status]).toEqual([framing, 413]);
        expect(answer.body).toMatch(/"error":413/);
        // The rest of the body was read to its end, so the next request on the same connection is served.
        expect(answer.body).toMatch(/HTTP\/1\.1 200 OK[\s\S]*\{"status":"ok"\}$/);
      }
    }
  });
});

describe("bodies of declared length and chunked", () => {
  it("reads a JSON body of declared length, and one sent in chunks", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const headers = { Authorization: `Bearer ${alice}`, "Content-Type": "application/json" };
    const body = Buffer.from('{"id":71,"name":"declared"}');
    const declared = await send(agent, "/plants", { method: "POST", headers: { ...headers, "Content-Length": String(body.length) }, body });
    expect([declared.status, JSON.parse(declared.body)]).toEqual([200, { name: "declared" }]);
    const chunked = await send(agent, "/plants", {
      method: "POST",
      headers: { ...headers, "Transfer-Encoding": "chunked" },
      body: [Buffer.from('{"id":72,'), Buffer.from('"name":"chunked"}')],
    });
    expect([chunked.status, JSON.parse(chunked.body)]).toEqual([200, { name: "chunked" }]);
    // Both bodies were read to their end: the same connection serves the next request.
    const listed = await send(agent, "/plants", { headers });
    expect(listed.reusedSocket).toBe(true);
    expect(JSON.parse(listed.body)).toEqual([{ name: "declared" }, { name: "chunked" }]);
    agent.destroy();
  });

  it("reads the options of a share sent over a socket with Content-Length", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const headers = { Authorization: `Bearer ${alice}`, "Content-Type": "application/json" };
    const context = JSON.parse((await send(agent, "/contexts", { method: "POST", headers, body: Buffer.from('{"name":"shared"}') })).body) as { id: string; name: string };
    expect(context.name).toBe("shared");
    const options = Buffer.from('{"expiresIn":3600}');
    const share = await send(agent, `/contexts/${context.id}/share`, { method: "POST", headers: { ...headers, "Content-Length": String(options.length) }, body: options });
    expect(share.status).toBe(201);
    expect((JSON.parse(share.body) as { expiresAt: string | null }).expiresAt).not.toBeNull();
    agent.destroy();
  });
});

describe("request headers", () => {
  it("accepts a realistic 18 KB access token with many group claims", async () => {
    const groups = Array.from({ length: 420 }, (_, i) => `org-${i}-plant-care-team-member`);
    const token = await h.signIn("big-token", { groups });
    expect(token.length).toBeGreaterThan(18_000);
    const answer = await exchange(
      `GET /me HTTP/1.1\r\n${host()}Authorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ name: "big-token" });
  });

  it("answers 431 with the Error body and closes the connection for 100 KB of headers", async () => {
    const answer = await exchange(`GET /health HTTP/1.1\r\n${host()}X-Padding: ${"p".repeat(100 * 1024)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toEqual({ error: 431, message: expect.stringMatching(/headers are over the 64 KiB limit/), code: "headers_too_large" });
    expect(answer.closed).toBe(true);
  });

  it("answers 431 with the Error body for a very long query string", async () => {
    const answer = await exchange(`GET /plants?q=${"x".repeat(70 * 1024)} HTTP/1.1\r\n${host()}\r\n`);
    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 431 });
  });
});

describe("malformed framing", () => {
  it("answers 400 with the Error body for a request line that is not HTTP", async () => {
    const answer = await exchange("HELLO THERE\r\n\r\n");
    expect(answer.status).toBe(400);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toEqual({ error: 400, message: expect.stringMatching(/not valid HTTP\/1\.1/), code: "malformed_request" });
  });

  it("answers 400 with the Error body for both Content-Length and chunked framing", async () => {
    const answer = await exchange(
      `POST /plants HTTP/1.1\r\n${host()}Content-Type: application/json\r\nContent-Length: 4\r\n` +
        "Transfer-Encoding: chunked\r\n\r\n4\r\n{}{}\r\n0\r\n\r\n",
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 400 });
  });

  it("answers 400 with the Error body for a bad chunk size, after serving the request before it", async () => {
    const answer = await exchange(
      `GET /health HTTP/1.1\r\n${host()}\r\n` +
        `POST /plants HTTP/1.1\r\n${host()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
    );
    // The first reply is the health check's; the second, the parser's refusal.
    expect(answer.status).toBe(200);
    const second = answer.body.slice(answer.body.indexOf("HTTP/1.1 "));
    expect(second).toMatch(/^HTTP\/1\.1 400 /);
    expect(second).toMatch(/"error":400/);
  });
});
