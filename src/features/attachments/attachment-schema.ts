import { z } from "@hono/zod-openapi";
import { serviceId } from "../../platform/http/service-id";

/** An attachment as replies show it: POST /attachments, and the messages that carry it. */
export const AttachmentSchema = z
  .object({
    id: serviceId("att", "att_Qm3x9QeZ0aB7cD2fG4hJ6w"),
    name: z.string().openapi({ example: "leaf.png" }),
    type: z.string().openapi({ example: "image/png", description: "Read from the file's bytes, never from what the client said" }),
    kind: z.enum(["image", "document"]),
    size: z.number().int().openapi({ description: "Bytes", example: 48213 }),
    pages: z.number().int().optional().openapi({ description: "A PDF's pages" }),
    chars: z.number().int().optional().openapi({ description: "A document's text, in characters" }),
  })
  .openapi("Attachment");
