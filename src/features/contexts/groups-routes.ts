import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import { createRouter } from "../../platform/http/router";
import { createGroup, deleteGroup, listGroups, renameGroup } from "./groups";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { Id, serviceId } from "../../platform/http/service-id";
import { text } from "../../platform/http/text";

const iso = z.string().openapi({ format: "date-time", example: "2026-11-22T12:00:00.000Z" });

const GroupSchema = z
  .object({
    id: serviceId("grp", "grp_Jx0vN2b4QmS8cD1eF5gH7w"),
    name: z.string().openapi({ example: "Succulents" }),
    contextCount: z.number().int().openapi({ description: "How many contexts are in the group", example: 3 }),
    createdAt: iso,
    updatedAt: iso,
  })
  .openapi("Group");

const groupName = text(1, 100, { trim: true, message: "must be 1..100 characters (not counting spaces around it)" }).openapi({
  example: "Succulents",
});
const GroupInputSchema = z.object({ name: groupName }).openapi("GroupInput");

const idParam = z.object({ id: Id.openapi({ param: { name: "id", in: "path" }, example: "grp_Jx0vN2b4QmS8cD1eF5gH7w" }) });
const groupBody = { required: true, content: { "application/json": { schema: GroupInputSchema } } };

const listRoute = authenticatedRoute({
  method: "get",
  path: "/groups",
  tags: ["groups"],
  summary: "List the caller's groups, by name",
  responses: {
    200: {
      description: "All of the caller's groups",
      content: { "application/json": { schema: z.object({ items: z.array(GroupSchema) }).openapi("GroupList") } },
    },
  },
});

const createGroupRoute = authenticatedRoute({
  method: "post",
  path: "/groups",
  tags: ["groups"],
  summary: "Create a group; names are unique per user",
  request: { body: groupBody },
  responses: {
    201: { description: "The group", content: { "application/json": { schema: GroupSchema } } },
  },
}, { errors: [409] });

const renameRoute = authenticatedRoute({
  method: "patch",
  path: "/groups/{id}",
  tags: ["groups"],
  summary: "Rename a group",
  request: { params: idParam, body: groupBody },
  responses: {
    200: { description: "The group", content: { "application/json": { schema: GroupSchema } } },
  },
}, { errors: [404, 409] });

const deleteRoute = authenticatedRoute({
  method: "delete",
  path: "/groups/{id}",
  tags: ["groups"],
  summary: "Delete a group; its contexts stay, in no group",
  request: { params: idParam },
  responses: { 204: { description: "Deleted" } },
}, { errors: [404] });

const nameTaken = (name: string) =>
  new ApiError("group_exists", `you already have a group named ${JSON.stringify(excerpt(name))}; choose another name`);
const groupNotFound = (id: string) => new ApiError("group_not_found", `group ${excerpt(id)} not found`);

export const groupRoutes = createRouter()
  .openapi(listRoute, async (c) => c.json({ items: await listGroups(c.get("deps").db, c.get("principal").userId) }, 200))
  .openapi(createGroupRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { name } = c.req.valid("json");
    const group = await createGroup(db, c.get("principal"), name, now());
    if (!group) throw nameTaken(name);
    return c.json(group, 201);
  })
  .openapi(renameRoute, async (c) => {
    const { db, now } = c.get("deps");
    const { id } = c.req.valid("param");
    const { name } = c.req.valid("json");
    const result = await renameGroup(db, c.get("principal").userId, id, name, now());
    if (result === "not-found") throw groupNotFound(id);
    if (result === "conflict") throw nameTaken(name);
    return c.json(result, 200);
  })
  .openapi(deleteRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteGroup(c.get("deps").db, c.get("principal").userId, id))) throw groupNotFound(id);
    return c.body(null, 204);
  });
