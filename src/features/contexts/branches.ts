import { sql, type SQL } from "drizzle-orm";
import { contexts, messages } from "../../../schema/index";
import type { Db } from "../../platform/db";

// ---------------------------------------------------------------------------------------
// A context's messages form a tree: each names its parent (null for a first message), and
// the context keeps the last message of its active branch (`leaf_id`). A branch is read as
// one recursive walk up `parent_id` from its last message: each step is a primary-key
// lookup, so a page costs its length, never the size of the tree. Which branch runs through
// a message that has replies below it: at each step down, the newest child (as Open WebUI
// and LibreChat show a conversation), so a branch always ends at a message with no reply.
// ---------------------------------------------------------------------------------------

/**
 * The last message of the branch through `start` (a message id in SQL, or NULL): `start`
 * itself when nothing follows it, else the newest child at each step down. NULL when
 * `start` is NULL. A scalar subquery, for a SELECT or an UPDATE's SET.
 */
export function leafBelow(contextId: string, start: SQL): SQL {
  return sql`(with recursive down(id, depth) as (
      select ${start}, 0
      union all
      select (select c.id from ${messages} c where c.context_id = ${contextId} and c.parent_id = down.id
              order by c.created_at desc, c.id desc limit 1), down.depth + 1
      from down where down.id is not null
    )
    select id from down where id is not null order by depth desc limit 1)`;
}

/** A message of the owner's context, as a SQL condition on the alias `m`. */
const inContext = (userId: string, contextId: string) => sql`m.context_id = ${contextId} and m.user_id = ${userId}`;

/**
 * Up to `count` messages of a branch, from `last` (a message id in SQL) back towards its
 * first message, newest first: `id`, `role`, `content`, `model`, `created_at`, `parent_id`,
 * and `siblings`, a JSON array of `[id, created_at]` of the messages that share its parent
 * (itself included). One statement.
 */
export function branchRows(userId: string, contextId: string, last: SQL, count: number): SQL {
  return sql`with recursive up(id, parent_id, depth) as (
      select m.id, m.parent_id, 0 from ${messages} m where m.id = ${last} and ${inContext(userId, contextId)}
      union all
      select m.id, m.parent_id, up.depth + 1 from up join ${messages} m on m.id = up.parent_id
      where up.depth < ${count - 1} and ${inContext(userId, contextId)}
    )
    select up.depth, m.id, m.role, m.content, m.model, m.created_at, m.parent_id, m.status, m.rating,
      (select json_group_array(json_array(s.id, s.created_at)) from ${messages} s
        where s.context_id = ${contextId} and s.parent_id is m.parent_id) as siblings
    from up join ${messages} m on m.id = up.id
    order by up.depth`;
}

/** The owner's context's active leaf, in SQL (NULL for an empty or a foreign context). */
export function activeLeaf(userId: string, contextId: string): SQL {
  return sql`(select ${contexts.leafId} from ${contexts} where ${contexts.id} = ${contextId} and ${contexts.userId} = ${userId})`;
}

/** The parent of a message of the owner's context, in SQL. */
export function parentOf(userId: string, contextId: string, messageId: string): SQL {
  return sql`(select m.parent_id from ${messages} m where m.id = ${messageId} and ${inContext(userId, contextId)})`;
}

/**
 * branchRows as a query-builder select, newest first: drizzle's D1 driver cannot put a raw
 * statement with parameters (db.all(sql`…`)) in a batch, and SQLite takes a WITH inside a
 * subquery of FROM.
 */
export function selectBranch(db: Db, userId: string, contextId: string, last: SQL, count: number) {
  const column = <T>(name: string) => sql<T>`${sql.raw(`b.${name}`)}`;
  return db
    .select({
      id: column<string>("id"),
      role: column<BranchRow["role"]>("role"),
      content: column<string>("content"),
      model: column<string | null>("model"),
      created_at: column<number>("created_at"),
      parent_id: column<string | null>("parent_id"),
      status: column<BranchRow["status"]>("status"),
      rating: column<number | null>("rating"),
      siblings: column<string>("siblings"),
      attachments: sql<string>`(select json_group_array(json_object('id', a.id, 'name', a.name, 'type', a.type, 'kind', a.kind, 'size', a.size, 'pages', a.pages, 'chars', a.chars))
        from (select a.* from message_attachments ma join attachments a on a.id = ma.attachment_id where ma.message_id = b.id order by ma.position) a)`,
    })
    .from(sql`(${branchRows(userId, contextId, last, count)}) as b`)
    .orderBy(sql`b.depth`);
}

/** A row of a branch (selectBranch). */
export interface BranchRow {
  id: string;
  role: "user" | "assistant";
  content: string;
  model: string | null;
  created_at: number;
  parent_id: string | null;
  status: "done" | "stopped" | "failed";
  rating: number | null;
  siblings: string;
  /** Its attachments as a JSON array (`[]` when none). */
  attachments: string;
}

/** The ids of a row's siblings, oldest first ((createdAt, id) order), itself included. */
export function siblingIds(row: Pick<BranchRow, "siblings">): string[] {
  const pairs = JSON.parse(row.siblings) as Array<[string, number]>;
  pairs.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return pairs.map(([id]) => id);
}
