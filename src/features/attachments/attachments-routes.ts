import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";
import { createRouter } from "../../platform/http/router";
import { Id } from "../../platform/http/service-id";
import { AttachmentSchema } from "./attachment-schema";
import { AttachmentNotFound, bytesOf, formatBytes, readableAttachment, uploadAttachment, type AttachmentRow } from "./attachments";

/** Room for the multipart framing around the file. */
const FRAMING_BYTES = 64 * 1024;


// The one multipart body the service takes besides a recording and an import: checked before it is read.
const requireMultipart = createMiddleware<AppEnv>(async (c, next) => {
  if (!/^multipart\/form-data\s*;/i.test(c.req.header("Content-Type") ?? "")) {
    throw new ApiError("unsupported_media_type", "send the file as multipart/form-data, in a field named 'file'");
  }
  await next();
});

/** The largest file of any kind, before the body is read (Content-Length, or counted as it streams). */
const limitUploadBody = createMiddleware<AppEnv>((c, next) => {
  const { MAX_IMAGE_BYTES, MAX_DOCUMENT_BYTES } = c.get("deps").config;
  const largest = Math.max(MAX_IMAGE_BYTES, MAX_DOCUMENT_BYTES);
  return bodyLimit({
    maxSize: largest + FRAMING_BYTES,
    onError: () => {
      throw new ApiError("attachment_too_large", `the file is over the ${formatBytes(largest)} limit (images: ${formatBytes(MAX_IMAGE_BYTES)}): attach a smaller file`, { field: "file" });
    },
  })(c, next);
});

const UploadForm = z
  .object({
    file: z.instanceof(File, { message: "must be a file (the multipart field 'file')" }).openapi({
      type: "string",
      format: "binary",
      description: "An image (PNG, JPEG, WebP, GIF; MAX_IMAGE_BYTES, default 10 MB) or a document (PDF, text, Markdown, CSV, JSON, source code; MAX_DOCUMENT_BYTES, default 20 MB)",
    }),
  })
  .openapi("AttachmentUpload");

const uploadRoute = authenticatedRoute(
  {
    method: "post",
    path: "/attachments",
    tags: ["attachments"],
    summary: "Upload a file to send with a message",
    description:
      "Its type is read from its bytes; a document's text is extracted (a PDF's with its page count). Send its id in " +
      "`attachments` of POST /chat/send. Counts against the person's storage (ATTACHMENT_QUOTA_BYTES) until its context " +
      "is deleted; an upload no message carries is deleted after a day.",
    request: { body: { required: true, content: { "multipart/form-data": { schema: UploadForm } } } },
    responses: { 201: { description: "The stored attachment", content: { "application/json": { schema: AttachmentSchema } } } },
  },
  { errors: [413, 415, 422, 503], middleware: [requireMultipart, limitUploadBody] },
);

const fileResponses = {
  200: {
    description: "The file, with its sniffed Content-Type, `Content-Disposition`, `X-Content-Type-Options: nosniff` and a CSP that runs nothing",
    content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
  },
};
const attachmentParam = Id.openapi({ param: { name: "id", in: "path" }, example: "att_Qm3x9QeZ0aB7cD2fG4hJ6w" });
const FileQuery = z.object({
  thumbnail: z.enum(["1", "true"]).optional().openapi({ description: "An image's thumbnail (today the image itself: no resizer runs on both runtimes)" }),
  download: z.enum(["1", "true"]).optional().openapi({ description: "`Content-Disposition: attachment` (default: inline for images)" }),
});

const readRoute = authenticatedRoute(
  {
    method: "get",
    path: "/attachments/{id}",
    tags: ["attachments"],
    summary: "An attachment's file, to its owner",
    request: { params: z.object({ id: attachmentParam }), query: FileQuery },
    responses: fileResponses,
  },
  { errors: [404, 503] },
);

const sharedReadRoute = createRoute({
  method: "get",
  path: "/shared/{token}/attachments/{id}",
  tags: ["shares"],
  summary: "A file of a shared snapshot: public, no authentication",
  request: {
    params: z.object({ token: z.string().openapi({ param: { name: "token", in: "path" }, example: "shr_kP3x9QeZ0aB7cD2fG4hJ6w" }), id: attachmentParam }),
    query: FileQuery,
  },
  responses: { ...fileResponses, ...errorResponses(400, 404, 503) },
});

export const attachmentRoutes = createRouter()
  .openapi(uploadRoute, async (c) => {
    const { file } = c.req.valid("form");
    const bytes = new Uint8Array(await file.arrayBuffer());
    const view = await uploadAttachment(c.get("deps"), c.get("principal"), { name: file.name, bytes });
    return c.json(view, 201);
  })
  .openapi(readRoute, async (c) => {
    const { id } = c.req.valid("param");
    const deps = c.get("deps");
    const row = await readableAttachment(deps.db, id, { userId: c.get("principal").userId, now: deps.now() });
    if (!row) throw new AttachmentNotFound(id);
    return serveFile(c, row, c.req.valid("query").download !== undefined) as never;
  })
  .openapi(sharedReadRoute, async (c) => {
    const { token, id } = c.req.valid("param");
    const deps = c.get("deps");
    const row = token.length <= 100 ? await readableAttachment(deps.db, id, { shareToken: token, now: deps.now() }) : undefined;
    if (!row) throw new AttachmentNotFound(id);
    return serveFile(c, row, c.req.valid("query").download !== undefined) as never;
  });

/**
 * The file as stored, served so that a browser can only show it: the sniffed type, no
 * sniffing of its own, and a CSP under which nothing runs even when opened as a page.
 * Images open inline, documents download.
 */
async function serveFile(c: Context<AppEnv>, row: AttachmentRow, download: boolean): Promise<Response> {
  const bytes = await bytesOf(c.get("deps"), row);
  const type = row.type.startsWith("text/") || row.type === "application/json" ? `${row.type}; charset=utf-8` : row.type;
  const disposition = download || row.kind !== "image" ? "attachment" : "inline";
  return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
    "Content-Type": type,
    "Content-Length": String(bytes.length),
    "Content-Disposition": `${disposition}; filename="${asciiName(row.name)}"; filename*=UTF-8''${encodeURIComponent(row.name)}`,
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, max-age=86400, immutable",
    "Cross-Origin-Resource-Policy": "same-origin",
  });
}

/** The name for the plain `filename` parameter: ASCII without quotes or backslashes. */
function asciiName(name: string): string {
  return name.replace(/[^\x20-\x7e]|["\\]/g, "_");
}
