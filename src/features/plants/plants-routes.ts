import { z } from "@hono/zod-openapi";
import type { TypedResponse } from "hono";
import { ApiError } from "../../platform/http/errors";
import { Int64Json, Int64Text } from "../../platform/http/int64";
import { createRouter } from "../../platform/http/router";
import { createPlant, deletePlant, listPlants, type Plant } from "./plants";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { plantPageQuery } from "../../platform/http/paging";
import { text } from "../../platform/http/text";

const PlantSchema = z
  .object({
    name: z.string().min(1).max(256).openapi({ example: "Monstera" }),
    tag: z.string().max(256).optional().openapi({ example: "tropical" }),
  })
  .openapi("Plant");

const NewPlantSchema = z
  .object({
    id: Int64Json,
    name: text(1, 256).openapi({ example: "Monstera" }),
    tag: text(0, 256).optional().openapi({ example: "tropical" }),
  })
  .openapi("NewPlant");

const addPlant = authenticatedRoute({
  method: "post",
  path: "/plants",
  tags: ["plants"],
  summary: "Create a plant",
  request: { body: { required: true, content: { "application/json": { schema: NewPlantSchema } } } },
  responses: {
    200: { description: "The plant", content: { "application/json": { schema: PlantSchema } } },
  },
}, { errors: [409] });

const listPlantsRoute = authenticatedRoute({
  method: "get",
  path: "/plants",
  tags: ["plants"],
  summary: "List the caller's plants, ordered by id",
  request: { query: plantPageQuery(1000, 100) },
  responses: {
    200: {
      description: "A page of plants; a Link header with rel=next when more remain",
      headers: z.object({ Link: z.string().optional() }),
      content: { "application/json": { schema: z.array(PlantSchema) } },
    },
  },
});

const removePlant = authenticatedRoute({
  method: "delete",
  path: "/plants/{id}",
  tags: ["plants"],
  summary: "Delete one of the caller's plants",
  request: { params: z.object({ id: Int64Text.openapi({ param: { name: "id", in: "path" } }) }) },
  responses: { 204: { description: "Deleted" } },
}, { errors: [404] });

export const plantRoutes = createRouter()
  .openapi(addPlant, async (c) => {
    const { db, now } = c.get("deps");
    const plant = c.req.valid("json");
    if (!(await createPlant(db, c.get("principal"), plant, now()))) {
      throw new ApiError("plant_exists", `a plant with id ${plant.id} already exists`);
    }
    return c.json(plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag }, 200);
  })
  .openapi(listPlantsRoute, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const page = await listPlants(c.get("deps").db, c.get("principal").userId, { limit, afterId: cursor });
    // limit and cursor are the only parameters; both are digits, so nothing needs escaping.
    if (page.next !== null) c.header("Link", `<${c.req.path}?limit=${limit}&cursor=${page.next}>; rel="next"`);
    // The page comes as JSON text, made by the database (see listPlants): typed here as
    // the JSON it is, which the router cannot see in a string.
    const body = c.body(page.json, 200, { "Content-Type": "application/json; charset=utf-8" });
    return body as unknown as TypedResponse<Plant[], 200, "json">;
  })
  .openapi(removePlant, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deletePlant(c.get("deps").db, c.get("principal").userId, id))) {
      throw new ApiError("plant_not_found", `plant ${id} not found`);
    }
    return c.body(null, 204);
  });
