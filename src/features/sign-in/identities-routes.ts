import { createRouter } from "../../platform/http/router";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { Id } from "../../platform/http/service-id";
import { SignInMethodSchema, signInMethodJson } from "../../platform/http/sign-in-method";
import { z } from "@hono/zod-openapi";
import { addSignInMethod, removeSignInMethod } from "./accounts";
import { proveIdentity, SignInProof } from "./session-routes";

// The account's sign-in methods (linked identities): GET /me lists them; adding or removing
// one needs the person (a session or an identity provider's token), as managing API keys does.

const addMethodRoute = authenticatedRoute(
  {
    method: "post",
    path: "/me/identities",
    tags: ["sign-in"],
    summary: "Add a sign-in method to the account: a wallet, or the identity provider's account",
    description: "Takes the same proofs as POST /auth/session. An identity that already signs in to another account is a 409, never merged.",
    request: { body: { required: true, content: { "application/json": { schema: SignInProof } } } },
    responses: {
      200: { description: "It was this account's already", content: { "application/json": { schema: SignInMethodSchema } } },
      201: { description: "Added", content: { "application/json": { schema: SignInMethodSchema } } },
    },
  },
  { jwtOnly: true, errors: [409, 503] },
);

const removeMethodRoute = authenticatedRoute(
  {
    method: "delete",
    path: "/me/identities/{id}",
    tags: ["sign-in"],
    summary: "Remove a sign-in method while another remains; the sessions it began end, but the one asking",
    request: { params: z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "idn_Vb7xQ2mK9pLs4Tn8Wc1yZa" }) }) },
    responses: { 204: { description: "Removed" } },
  },
  { jwtOnly: true, errors: [404, 409] },
);

export const identityRoutes = createRouter()
  .openapi(addMethodRoute, async (c) => {
    const deps = c.get("deps");
    const identity = await proveIdentity(c, c.req.valid("json") as Parameters<typeof proveIdentity>[1]);
    const { method, created } = await addSignInMethod(deps, c.get("principal").userId, identity, deps.now());
    return c.json(signInMethodJson(method), created ? 201 : 200);
  })
  .openapi(removeMethodRoute, async (c) => {
    const deps = c.get("deps");
    const principal = c.get("principal");
    const keep = principal.via === "session" ? principal.sessionId : undefined;
    await removeSignInMethod(deps, principal.userId, c.req.valid("param").id, deps.now(), keep);
    return c.body(null, 204);
  });
