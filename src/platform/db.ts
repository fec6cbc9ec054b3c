import type { D1Database } from "@cloudflare/workers-types";
import type { Client } from "@libsql/client";
import { fillPlaceholders } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { drizzle as drizzleD1 } from "drizzle-orm/d1";
// The `http` entry's drizzle() wraps whatever Client it is given (the Node thread client
// too); it is the entry that does not import @libsql/client's WebSocket transport, which
// the Worker never uses and would otherwise carry (4 KiB gzipped).
import { drizzle as drizzleLibsql } from "drizzle-orm/libsql/http";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import type { PreparedQueryConfig, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import * as schema from "../../schema/index";

/**
 * The database as the services see it. D1 and libSQL speak the same SQLite dialect and
 * drizzle gives both the same query builder and `batch`, so one type serves both.
 * Services use `.returning()` rather than driver-specific run() results.
 */
export type Db = LibSQLDatabase<typeof schema>;

export function dbFromLibsql(client: Client): Db {
  return drizzleLibsql(client, { schema, casing: "snake_case" });
}

export function dbFromD1(binding: D1Database): Db {
  return drizzleD1(binding as never, { schema, casing: "snake_case" }) as unknown as Db;
}

/**
 * A value built once per database handle, e.g. prepared statements. Building SQL with the
 * query builder costs about as much as an embedded database takes to run it, so the hot
 * paths build their fixed-shape statements once, with sql.placeholder()s, and bind values
 * per call. The Worker keeps one handle per D1 binding (src/worker.ts), so there too.
 */
export function perDb<T>(build: (db: Db) => T): (db: Db) => T {
  const built = new WeakMap<Db, T>();
  return (db) => {
    let value = built.get(db);
    if (value === undefined) built.set(db, (value = build(db)));
    return value;
  };
}

/**
 * A prepared statement with its placeholders filled in, as an item for `db.batch`. The
 * batch of both drivers asks an item for `_prepare()`, then uses the prepared query's
 * `getQuery()`, `mapResult()` and (D1) `stmt`: a copy of the prepared query whose query
 * carries the values serves both.
 */
export function bound(prepared: SQLitePreparedQuery<PreparedQueryConfig>, values: Record<string, unknown>): BatchItem<"sqlite"> {
  const { sql, params } = prepared.getQuery();
  return Object.create(prepared, {
    query: { value: { sql, params: fillPlaceholders(params, values) } },
    _prepare: { value: returnThis },
  }) as BatchItem<"sqlite">;
}

/**
 * Like `bound`, with the batch's result for this item mapped by `map` from each row's
 * column values, in the order selected. drizzle maps a row by walking its selected fields
 * and their decoders: for a context's history, hundreds of rows, that cost more than
 * reading them. For plain columns (text, integers) the values need no decoding.
 */
export function boundRows<T>(
  prepared: SQLitePreparedQuery<PreparedQueryConfig>,
  values: Record<string, unknown>,
  map: (row: ArrayLike<unknown>) => T,
): BatchItem<"sqlite"> {
  const item = bound(prepared, values);
  return Object.defineProperty(item, "mapResult", {
    value: (result: { rows?: ArrayLike<unknown>[]; results?: Record<string, unknown>[] }) =>
      // libSQL gives rows that index like arrays; D1 gives objects, their keys in column order.
      result.rows ? result.rows.map(map) : (result.results ?? []).map((row) => map(Object.values(row))),
  });
}

function returnThis<T>(this: T): T {
  return this;
}

/** A keyset position for paging: a time (ms since the epoch) and an id that breaks ties. */
export interface Position {
  at: number;
  id: string;
}
