import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { DisplayName } from "../../platform/http/display-name";
import { errorResponses } from "../../platform/http/error-responses";
import { withJsonBody } from "../../platform/http/json-body-route";

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
    "Exists only when no identity provider is configured and NODE_ENV is not production; otherwise a 404.",
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: z.object({ name: DisplayName.openapi({ example: "alice" }) }).openapi("LocalLogin") } },
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
    ...errorResponses(400, 404, 413, 415),
  },
}));

export const localLoginRoutes = createRouter().openapi(localLogin, async (c) => {
  // The token's times are the wall clock's: they are checked against it, not the app's clock.
  const { token, expiresAt } = await c.get("deps").localLogin!(c.req.valid("json").name);
  return c.json({ token, expiresAt: expiresAt.toISOString() }, 200);
});
