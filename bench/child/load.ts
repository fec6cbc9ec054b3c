// The load generator, in its own process: `node bench/child/load.ts <spec.json>`. Runs
// autocannon and prints its result as JSON. Each request takes the next of `tokens` (many
// users, each verified on first sight) and the next of `bodies` when given.
import { readFileSync } from "node:fs";
import autocannon from "autocannon";

interface Spec {
  url: string;
  seconds: number;
  connections: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  tokens?: string[];
  /** One body per token (same index), e.g. a chat message into that user's context. */
  bodies?: string[];
}

const spec = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Spec;
let next = 0;
const result = await autocannon({
  url: spec.url,
  duration: spec.seconds,
  connections: spec.connections,
  method: (spec.method ?? "GET") as "GET",
  headers: spec.headers,
  body: spec.body,
  requests: [
    {
      setupRequest: (req: { headers?: Record<string, string>; body?: string }) => {
        const i = next++;
        if (spec.tokens?.length) {
          const k = i % spec.tokens.length;
          req.headers = { ...req.headers, authorization: `Bearer ${spec.tokens[k]}` };
          if (spec.bodies) req.body = spec.bodies[k];
        }
        return req;
      },
    },
  ],
});
process.stdout.write(JSON.stringify(result));
