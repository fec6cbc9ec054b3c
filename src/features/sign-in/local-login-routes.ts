import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { DisplayName } from "../../platform/http/display-name";
import { errorResponses } from "../../platform/http/error-responses";
import { withJsonBody } from "../../platform/http/json-body-route";
import type { BatchItem } from "drizzle-orm/batch";
import { accountFor } from "./accounts";
import { proveLocalName } from "./proofs";
import { countSignIn, refuseRemoteLocalLogin, signUpRequestOf } from "./session-routes";

// Before the body is validated: outside local login the endpoint does not exist at all, as
// docs/api.md says (the ordinary 404, not a 403 or a 400 about the body).
const onlyInLocalLogin = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.get("deps").localLogin) throw new ApiError("not_found", `no such endpoint: ${c.req.method} ${c.req.path}`);
  await next();
});

const localLogin = withJsonBody(createRoute({
  method: "post",
  path: "/auth/local",
  tags: ["web client"],
  middleware: [onlyInLocalLogin] as const,
  summary: "Log in with a name (local login only)",
  description:
    "Issues the access token `npm run token -- <name>` prints, valid 24 hours; the same name is the same user. " +
    "Exists only when no identity provider is configured and NODE_ENV is not production; otherwise a 404. " +
    "Like a name given to POST /auth/session: only from this machine unless LOCAL_LOGIN=network, a new name is a new account under the sign-up policy, and sign-ins are limited.",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              name: DisplayName.openapi({ example: "alice" }),
              inviteCode: z.string().min(1).max(200).optional().openapi({ description: "For a new name where sign-up is by invite" }),
              turnstileToken: z.string().min(1).max(2048).optional().openapi({ description: "For a new name where Turnstile is configured" }),
            })
            .openapi("LocalLogin"),
        },
      },
    },
  },
  responses: {
    200: {
      description: "An access token for Authorization: Bearer",
      content: {
        "application/json": {
          schema: z
            .object({ token: z.string(), expiresAt: z.string().openapi({ format: "date-time" }) })
            .openapi("LocalToken"),
        },
      },
    },
    ...errorResponses(400, 403, 404, 413, 415, 429, 503),
  },
}));

export const localLoginRoutes = createRouter().openapi(localLogin, async (c) => {
  const deps = c.get("deps");
  const body = c.req.valid("json");
  refuseRemoteLocalLogin(c);
  // A new name is a new account, made now under the sign-up policy (not by the token's first write).
  const identity = proveLocalName(body.name);
  const { prepare } = await accountFor(deps, identity, deps.now(), signUpRequestOf(c, body));
  await countSignIn(c, identity);
  if (prepare.length > 0) await deps.db.batch(prepare as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  // The token's times are the wall clock's: they are checked against it, not the app's clock.
  const { token, expiresAt } = await deps.localLogin!(body.name);
  return c.json({ token, expiresAt: expiresAt.toISOString() }, 200);
});
