import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import { perDb, type Db } from "../../platform/db";
import { plants } from "../../../schema/index";
import { ensureUser } from "../../platform/auth/users";

export interface Plant {
  name: string;
  tag?: string;
}

// Ids travel as decimal text and are cast in SQL, so no driver ever holds them as a double.
const idParam = (id: bigint) => sql`cast(${id.toString()} as integer)`;

/** Creates a plant; false when the caller already has one with this id. One round trip. */
export async function createPlant(
  db: Db,
  principal: Principal,
  plant: { id: bigint; name: string; tag?: string },
  now: Date,
): Promise<boolean> {
  const insert = db
    .insert(plants)
    .values({ ownerId: principal.userId, id: idParam(plant.id), name: plant.name, tag: plant.tag ?? null })
    .onConflictDoNothing()
    .returning({ name: plants.name });
  const user = ensureUser(db, principal, now);
  if (!user) return (await insert).length === 1;
  const [, inserted] = await db.batch([user, insert]);
  return inserted.length === 1;
}

// The list query is prepared once per database handle: building it with the query builder
// costs more than running it against an embedded database.
const preparedLists = perDb(prepareLists);

/**
 * A page of plants as the JSON the API returns, built by the database: the page's rows,
 * then one row with their JSON array, the last id (as text: exact on every driver) and
 * whether a plant follows it. Handing each value of each row across the driver and then
 * mapping and serialising the rows cost about half of a plant request on Node; SQLite's
 * json_object quotes strings as JSON.stringify does. `order by` in the aggregate keeps the
 * page's order on every engine, not only where the subquery's order happens to survive.
 */
function prepareLists(db: Db) {
  const page = (after: boolean) => {
    const rows = db
      .select({ id: plants.id, name: plants.name, tag: plants.tag })
      .from(plants)
      .where(
        and(
          eq(plants.ownerId, sql.placeholder("ownerId")),
          after ? gt(plants.id, sql`cast(${sql.placeholder("afterId")} as integer)`) : undefined,
        ),
      )
      .orderBy(asc(plants.id))
      .limit(sql.placeholder("limit"))
      .as("page_rows");
    const summary = db
      .select({
        json: sql<string>`json_group_array(case when ${rows.tag} is null then json_object('name', ${rows.name}) else json_object('name', ${rows.name}, 'tag', ${rows.tag}) end order by ${rows.id})`.as("json"),
        lastId: sql<number | null>`max(${rows.id})`.as("last_id"),
      })
      .from(rows)
      .as("page");
    return db
      .select({
        json: summary.json,
        lastId: sql<string | null>`cast(${summary.lastId} as text)`,
        more: sql<number>`exists (select 1 from ${plants} where ${plants.ownerId} = ${sql.placeholder("ownerId")} and ${plants.id} > ${summary.lastId})`,
      })
      .from(summary)
      .prepare();
  };
  return { first: page(false), after: page(true) };
}

/**
 * One page of the owner's plants in id order, after `afterId` when given, as a JSON array
 * of `{ name, tag? }`. `next` is the id to continue after, or null on the last page. One
 * round trip.
 */
export async function listPlants(
  db: Db,
  ownerId: string,
  page: { limit: number; afterId?: bigint },
): Promise<{ json: string; next: string | null }> {
  const lists = preparedLists(db);
  const [row] =
    page.afterId === undefined
      ? await lists.first.values({ ownerId, limit: page.limit })
      : await lists.after.values({ ownerId, afterId: page.afterId.toString(), limit: page.limit });
  // Read by position: a libSQL row indexes like an array but is not iterable.
  const values = row as unknown as ArrayLike<unknown>;
  return { json: values[0] as string, next: values[2] ? (values[1] as string) : null };
}

/** Deletes the owner's plant; false when there was none. One round trip. */
export async function deletePlant(db: Db, ownerId: string, id: bigint): Promise<boolean> {
  const deleted = await db
    .delete(plants)
    .where(and(eq(plants.ownerId, ownerId), eq(plants.id, idParam(id))))
    .returning({ name: plants.name });
  return deleted.length === 1;
}
