// The little of oidc-provider's API the test fixture uses (the package ships no types, and
// @types/oidc-provider drags in Koa's types, which clash with the DOM's File in this project).
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
