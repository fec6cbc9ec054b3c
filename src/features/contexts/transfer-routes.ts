import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { Id } from "../../platform/http/service-id";
import { ContextSchema } from "./context-schema";
import { AttachmentSchema } from "../attachments/attachment-schema";
import { uploadImportedFiles, withExportedFiles } from "../attachments/exported-files";
import { defaultModelOf } from "../account/profile";
import { EXPORT_FORMAT, EXPORT_VERSION, exportAccount, exportContext, exportMarkdown, type ExportDocument } from "./exports";
import { IMPORT_LIMITS } from "./imported-contexts";
import { importContexts, readImport } from "./imports";
import { shareUrl } from "./shares";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });
const MIB = 1024 * 1024;

const ExportedMessageSchema = z
  .object({
    id: z.string(),
    parentId: z.string().nullable(),
    role: z.enum(["user", "assistant"]),
    content: z.string(),
    model: z.string().optional(),
    createdAt: iso,
    attachments: z
      .array(AttachmentSchema.extend({ data: z.string().openapi({ description: "The file's bytes, base64" }) }))
      .optional()
      .openapi({ description: "The files the message carries, with their bytes" }),
  })
  .openapi("ExportedMessage");

const ExportedContextSchema = ContextSchema.omit({ messageCount: true })
  .extend({ messages: z.array(ExportedMessageSchema).openapi({ description: "Every message of every branch, oldest first" }) })
  .openapi("ExportedContext");

const ExportDocumentSchema = z
  .object({
    format: z.literal(EXPORT_FORMAT),
    version: z.literal(EXPORT_VERSION),
    exportedAt: iso,
    profile: z.record(z.string(), z.unknown()).optional().openapi({ description: "GET /me/export: the profile, as GET /me answers it (presets included)" }),
    groups: z.array(z.object({ id: z.string(), name: z.string(), createdAt: iso })),
    contexts: z.array(ExportedContextSchema),
    shares: z
      .array(z.object({ token: z.string(), url: z.string(), contextId: z.string(), createdAt: iso, expiresAt: iso.nullable() }))
      .optional()
      .openapi({ description: "GET /me/export: the live share links" }),
    apiKeys: z
      .array(z.object({ id: z.string(), name: z.string(), prefix: z.string(), createdAt: iso, lastUsedAt: iso.nullable() }))
      .optional()
      .openapi({ description: "GET /me/export: the API keys, never their secrets" }),
    usage: z
      .object({
        days: z.array(z.object({ day: z.string(), used: z.number().int() })),
        messages: z.array(
          z.object({ at: iso, model: z.string(), contextId: z.string().nullable(), messageId: z.string().nullable(), credits: z.number().int() }),
        ),
      })
      .optional()
      .openapi({ description: "GET /me/export: credits used per day and per message (kept 90 days)" }),
  })
  .openapi("ExportDocument");

const exportContextRoute = authenticatedRoute(
  {
    method: "get",
    path: "/contexts/{id}/export",
    tags: ["contexts"],
    summary: "Download a context: every branch as JSON (which POST /contexts/import takes back), or the active branch as Markdown",
    request: {
      params: z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "ctx_3q2-7wEv0dQkX1sYb6nN8A" }) }),
      query: z.object({
        format: z.enum(["json", "markdown"], { error: "must be json or markdown" }).optional().default("json").openapi({ description: "Default json" }),
      }),
    },
    responses: {
      200: {
        description: "The context, as an attachment (`Content-Disposition`)",
        content: {
          "application/json": { schema: ExportDocumentSchema },
          "text/markdown": { schema: z.string().openapi({ example: "# Repotting\n\n## You, 2026-11-22 12:00 UTC\n\nWhen should I repot?\n" }) },
        },
      },
    },
  },
  { errors: [404] },
);

const exportAccountRoute = authenticatedRoute({
  method: "get",
  path: "/me/export",
  tags: ["profile"],
  summary: "Download everything you own as one JSON document: profile, groups, contexts with every branch, share links, API keys (no secrets), usage",
  responses: {
    200: { description: "The document, as an attachment (`Content-Disposition`)", content: { "application/json": { schema: ExportDocumentSchema } } },
  },
});

const ImportReplySchema = z
  .object({
    items: z.array(ContextSchema).openapi({ description: "The contexts created, in the file's order" }),
    skipped: z.number().int().openapi({
      description: "The file's contexts already here, not imported again: imported from the same file before, or this account's own (by their id in the file)",
      example: 0,
    }),
  })
  .openapi("ImportResult");

const importRoute = authenticatedRoute(
  {
    method: "post",
    path: "/contexts/import",
    tags: ["contexts"],
    summary: "Create contexts from an export of this service or ChatGPT's conversations.json",
    description:
      `The body is the file, up to ${IMPORT_LIMITS.bytes / MIB} MiB: this service's export (GET /me/export, GET /contexts/{id}/export) ` +
      "or ChatGPT's `conversations.json` (an array of conversations whose `mapping` is a tree of nodes). Every branch is kept; ids are new; " +
      "a context already here (imported from the same file before, or this account's own, by its id in the file) is skipped and counted in `skipped`; " +
      `no credits are charged. At most ${IMPORT_LIMITS.contexts} contexts and ${IMPORT_LIMITS.messages} messages of up to ${IMPORT_LIMITS.content} ` +
      "characters each. A file that cannot be imported is a 400 (`import_invalid`) naming where it is wrong, and nothing is imported.",
    request: {
      body: {
        required: true,
        content: {
          // Documentation only (not a zod schema): the file is checked by imports.ts, which
          // names the path of what is wrong in either format.
          "application/json": {
            schema: {
              oneOf: [
                { $ref: "#/components/schemas/ExportDocument" },
                {
                  type: "array",
                  description: "ChatGPT's conversations.json",
                  items: { type: "object", required: ["mapping"], properties: { title: { type: ["string", "null"] }, mapping: { type: "object" }, current_node: { type: ["string", "null"] } } },
                },
              ],
            },
          },
        },
      },
    },
    responses: {
      201: { description: "The contexts created", content: { "application/json": { schema: ImportReplySchema } } },
    },
  },
  { errors: [413, 422, 503], middleware: [limitImportBody()] },
);

/**
 * The import's body: its own limit (larger than the JSON bodies of other routes, which it
 * is registered before), read once and parsed here.
 */
function limitImportBody() {
  const tooLarge = (): never => {
    throw new ApiError("body_too_large", `the file is over the ${IMPORT_LIMITS.bytes / MIB} MiB an import may be; split it and import the parts`, {
      headers: { Connection: "close" },
    });
  };
  const limit = bodyLimit({ maxSize: IMPORT_LIMITS.bytes, onError: tooLarge });
  return createMiddleware<AppEnv>(async (c, next) => {
    const type = (c.req.header("Content-Type") ?? "").split(";")[0]!.trim();
    if (!/^application\/([\w.+-]+\+)?json$/i.test(type)) throw new ApiError("unsupported_media_type", "send the file as JSON, with 'Content-Type: application/json'");
    await limit(c, next);
  });
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

async function readFile(c: Context<AppEnv>): Promise<unknown> {
  let text: string;
  try {
    text = strictUtf8.decode(await c.req.arrayBuffer());
  } catch {
    throw new ApiError("invalid_request", "the file is not valid UTF-8 text");
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const detail = err instanceof Error ? err.message.replace(/\s+/g, " ").slice(0, 120) : "";
    throw new ApiError("import_invalid", `the file is not valid JSON${detail ? ` (${detail})` : ""}`);
  }
}

/** A file name for a download: the context's name, in the characters every system takes. */
function fileName(name: string, extension: string): string {
  const base = name.normalize("NFKD").replace(/[^\w\- ]+/g, "").trim().replace(/\s+/g, "-").slice(0, 60) || "conversation";
  return `${base}.${extension}`;
}

const attachment = (name: string) => ({ "Content-Disposition": `attachment; filename="${name}"` });

/** The live links of an account export, with the URL each opens. */
function withLinks(c: Context<AppEnv>, { shares, ...document }: ExportDocument) {
  return { ...document, shares: (shares ?? []).map((s) => ({ ...s, url: shareUrl(c.get("deps"), s.token) })) };
}

/** Registered before the app's JSON body parser, which the import's larger body must not meet. */
export const importRoutes = createRouter().openapi(importRoute, async (c) => {
  const { db, now } = c.get("deps");
  const file = await readFile(c);
  const imported = readImport(file, now());
  await uploadImportedFiles(c.get("deps"), c.get("principal"), imported);
  const result = await importContexts(db, c.get("principal"), imported, now());
  return c.json(result, 201);
});

export const exportRoutes = createRouter()
  .openapi(exportContextRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { id } = c.req.valid("param");
    const userId = c.get("principal").userId;
    if (c.req.valid("query").format === "markdown") {
      const { name, markdown } = await exportMarkdown(db, userId, id);
      return c.body(markdown, 200, { "Content-Type": "text/markdown; charset=utf-8", ...attachment(fileName(name, "md")) });
    }
    const document = await withExportedFiles(c.get("deps"), userId, await exportContext(db, userId, id, now()));
    return c.json(document, 200, attachment(fileName(document.contexts[0]!.name, "json")));
  })
  .openapi(exportAccountRoute, async (c) => {
    const { db, now, models } = c.get("deps");
    const at = now();
    const document = await withExportedFiles(c.get("deps"), c.get("principal").userId, await exportAccount(db, c.get("principal"), at, defaultModelOf(models)));
    return c.json(withLinks(c, document), 200, attachment(`assistant-chat-export-${at.toISOString().slice(0, 10)}.json`));
  });
