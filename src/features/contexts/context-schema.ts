import { z } from "@hono/zod-openapi";
import { serviceId } from "../../platform/http/service-id";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });

/** A context as replies show it (GET /contexts and its neighbours, exports). */
export const ContextSchema = z
  .object({
    id: serviceId("ctx", "ctx_3q2-7wEv0dQkX1sYb6nN8A"),
    name: z.string().openapi({ example: "Repotting the monstera" }),
    nameSource: z.enum(["person", "message", "model"]).openapi({
      description:
        "Who named the context: the person (a name they set is never replaced), the first message's words " +
        "(replaced by a title the model writes after the first reply), or the model",
    }),
    groupId: serviceId("grp", "grp_Jx0vN2b4QmS8cD1eF5gH7w").nullable(),
    messageCount: z.number().int().openapi({ example: 12, description: "Messages in every branch" }),
    leafId: serviceId("msg", "msg_Yv3Q0k8mN2pR5sT7uW9xZA").nullable().openapi({
      description: "The last message of the active branch; null when there are no messages",
    }),
    instructions: z.string().nullable().openapi({ description: "The system prompt sent to the model first on every message", example: "Answer briefly, in metric units." }),
    pinned: z.boolean(),
    archived: z.boolean(),
    createdAt: iso,
    updatedAt: iso,
  })
  .openapi("Context");
