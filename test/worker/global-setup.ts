import type { TestProject } from "vitest/node";
import { startFakeUpstream } from "../support/fake-upstream";

// A real OpenAI-compatible upstream on 127.0.0.1, in Node, for the Worker under test to call.
export default async function setup(project: TestProject) {
  const upstream = await startFakeUpstream();
  // What its GET /v1/models lists, for a provider discovered from the Worker.
  upstream.models = ["worker-llama"];
  // A message that begins "(held)" gets a reply streamed a word every 100 ms until the test
  // ends it (POST /test/release-held).
  const lastUser = (req: { body: { messages: Array<{ role: string; content: unknown }> } }) =>
    String([...req.body.messages].reverse().find((m) => m.role === "user")?.content ?? "");
  upstream.holds = (req) => lastUser(req).startsWith("(held)");
  // "(endless)": the same, until the Worker hangs up (a reply stopped; no release ends it).
  upstream.endless = (req) => lastUser(req).startsWith("(endless)");
  project.provide("upstreamUrl", upstream.baseUrl);
  return () => upstream.close();
}

declare module "vitest" {
  export interface ProvidedContext {
    upstreamUrl: string;
  }
}
