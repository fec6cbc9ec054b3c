import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import { createRouter } from "../../platform/http/router";
import { AttachmentSchema } from "../attachments/attachment-schema";
import { listShares, MAX_SNAPSHOT_BYTES, readShared, revokeShare, shareContext, shareUrl, type ShareView } from "./shares";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";
import { Id, serviceId } from "../../platform/http/service-id";
import { encodeCursor, pageQuery } from "../../platform/http/paging";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });
const MAX_EXPIRES_IN = 365 * 24 * 3600;

const ShareLinkSchema = z
  .object({
    token: serviceId("shr", "shr_kP3x9QeZ0aB7cD2fG4hJ6w"),
    url: z.string().openapi({ example: "https://chat.example.com/s/shr_kP3x9QeZ0aB7cD2fG4hJ6w", description: "The web client's page of the snapshot; GET /shared/{token} has its JSON" }),
    createdAt: iso,
    expiresAt: iso.nullable().openapi({ description: "When the link stops working; null: never" }),
  })
  .openapi("ShareLink");

const SharedContextSchema = z
  .object({
    name: z.string(),
    messages: z.array(
      z.object({
        role: z.enum(["user", "assistant"]),
        content: z.string(),
        model: z.string().optional(),
        createdAt: iso,
        attachments: z.array(AttachmentSchema).optional().openapi({ description: "Its files; GET /shared/{token}/attachments/{id} serves each" }),
      }),
    ),
    sharedAt: iso,
    expiresAt: iso.nullable(),
  })
  .openapi("SharedContext");

const secondsMessage = `must be a whole number of seconds from 60 to ${MAX_EXPIRES_IN}`;
// The body parser hands integers over as bigint (it keeps int64 ids exact), fractions as numbers.
const seconds = z
  .custom<number | bigint>((v) => typeof v === "number" || typeof v === "bigint", { message: secondsMessage })
  .transform((v) => Number(v))
  .pipe(z.number().int(secondsMessage).min(60, secondsMessage).max(MAX_EXPIRES_IN, secondsMessage))
  .openapi({ type: "integer", minimum: 60, maximum: MAX_EXPIRES_IN });

const contextParam = z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }) });

const shareRoute = authenticatedRoute({
  method: "post",
  path: "/contexts/{id}/share",
  tags: ["shares"],
  summary: "Share a snapshot of the context as it is now by a public link",
  description:
    "Sharing again replaces the snapshot (and the expiry) behind the same token; a link that has " +
    "expired is not revived: it gets a new token. Revoke with DELETE to invalidate a token.",
  request: {
    params: contextParam,
    body: {
      required: false,
      content: {
        "application/json": {
          schema: z
            .object({
              expiresIn: seconds
                .optional()
                .openapi({ description: "Seconds until the link stops working; without it, it never does" }),
            })
            .openapi("ShareOptions"),
        },
      },
    },
  },
  responses: {
    201: { description: "The link", content: { "application/json": { schema: ShareLinkSchema } } },
  },
}, { errors: [404, 413] });

const revokeRoute = authenticatedRoute({
  method: "delete",
  path: "/contexts/{id}/share",
  tags: ["shares"],
  summary: "Revoke the context's share link; it answers 404 from then on",
  request: { params: contextParam },
  responses: { 204: { description: "Revoked" } },
}, { errors: [404] });

const listRoute = authenticatedRoute({
  method: "get",
  path: "/shares",
  tags: ["shares"],
  summary: "The caller's live share links, newest first",
  request: {
    query: pageQuery(100, 50),
  },
  responses: {
    200: {
      description: "A page of links; `nextCursor` is null on the last page",
      content: {
        "application/json": {
          schema: z
            .object({
              items: z.array(ShareLinkSchema.extend({ contextId: serviceId("ctx", "ctx_3q2-7wEv0dQkX1sYb6nN8A"), name: z.string() })),
              nextCursor: z.string().nullable(),
            })
            .openapi("ShareList"),
        },
      },
    },
  },
});

const sharedRoute = createRoute({
  method: "get",
  path: "/shared/{token}",
  tags: ["shares"],
  summary: "A shared snapshot: public, read-only, no authentication",
  request: { params: z.object({ token: z.string().openapi({ param: { name: "token", in: "path" }, example: "shr_kP3x9QeZ0aB7cD2fG4hJ6w" }) }) },
  responses: {
    200: { description: "The snapshot", content: { "application/json": { schema: SharedContextSchema } } },
    ...errorResponses(404),
  },
});

/**
 * The web client's page of a token (/s/…, which reads GET /shared/… itself): on
 * PUBLIC_BASE_URL when configured, else on the origin the entry vouches for (never the Host
 * header a caller sends to the Node server).
 */

const withUrl = (c: Context<AppEnv>, share: ShareView) => ({
  token: share.token,
  url: shareUrl(c.get("deps"), share.token),
  createdAt: share.createdAt,
  expiresAt: share.expiresAt,
});

const linkNotFound = () => new ApiError("share_not_found", "this shared link does not exist, has been revoked or has expired");

export const shareRoutes = createRouter()
  .openapi(shareRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { id } = c.req.valid("param");
    const { expiresIn } = c.req.valid("json");
    const result = await shareContext(db, c.get("principal").userId, id, { expiresInSeconds: expiresIn }, now());
    if (result === "not-found") throw new ApiError("context_not_found", `context ${excerpt(id)} not found`);
    if (result === "too-large") {
      throw new ApiError(
        "body_too_large",
        `context ${excerpt(id)} is too long to share as one link (over ${MAX_SNAPSHOT_BYTES / 1_000_000} MB); share a shorter conversation`,
      );
    }
    return c.json(withUrl(c, result), 201);
  })
  .openapi(revokeRoute, async (c) => {
    const { id } = c.req.valid("param");
    const result = await revokeShare(c.get("deps").db, c.get("principal").userId, id);
    if (result === "no-context") throw new ApiError("context_not_found", `context ${excerpt(id)} not found`);
    if (result === "no-share") throw new ApiError("share_not_found", `context ${excerpt(id)} has no share link`);
    return c.body(null, 204);
  })
  .openapi(listRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { limit, cursor: after } = c.req.valid("query");
    const page = await listShares(db, c.get("principal").userId, { limit, after }, now());
    return c.json(
      {
        items: page.items.map((s) => ({ ...withUrl(c, s), contextId: s.contextId, name: s.name })),
        nextCursor: page.next && encodeCursor(page.next),
      },
      200,
    );
  })
  .openapi(sharedRoute, async (c) => {
    const { token } = c.req.valid("param");
    const shared = token.length <= 100 ? await readShared(c.get("deps").db, token, c.get("deps").now()) : null;
    // Revocation and expiry take effect at once: no cache may keep a copy.
    c.header("Cache-Control", "no-store");
    c.header("X-Robots-Tag", "noindex");
    if (!shared) throw linkNotFound();
    return c.json(shared, 200);
  });
