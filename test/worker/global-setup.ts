import type { TestProject } from "vitest/node";
import { startFakeUpstream } from "../support/fake-upstream";

// A real OpenAI-compatible upstream on 127.0.0.1, in Node, for the Worker under test to call.
export default async function setup(project: TestProject) {
  const upstream = await startFakeUpstream();
  // What its GET /v1/models lists, for a provider discovered from the Worker.
  upstream.models = ["worker-llama"];
  // A message that begins "(slow)" gets a long reply, streamed a piece every 150 ms (3.6 s).
  const lastUser = (req: { body: { messages: Array<{ role: string; content: unknown }> } }) =>
    String([...req.body.messages].reverse().find((m) => m.role === "user")?.content ?? "");
  const echo = upstream.reply;
  upstream.reply = (req) => (lastUser(req).startsWith("(slow)") ? Array.from({ length: 24 }, (_, i) => `word${i}`).join(" ") : echo(req));
  upstream.pieceDelayFor = (req) => (lastUser(req).startsWith("(slow)") ? 150 : undefined);
  project.provide("upstreamUrl", upstream.baseUrl);
  return () => upstream.close();
}

declare module "vitest" {
  export interface ProvidedContext {
    upstreamUrl: string;
  }
}
