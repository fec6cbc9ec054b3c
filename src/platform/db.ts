import type { D1Database } from "@cloudflare/workers-types";
import type { Client, InValue } from "@libsql/client";
import { fillPlaceholders, is, Param, Placeholder, type Query } from "drizzle-orm";
import { drizzle as drizzleD1 } from "drizzle-orm/d1";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
// The `http` entry's drizzle() wraps whatever Client it is given (the Node thread client
// too); it is the entry that does not import @libsql/client's WebSocket transport, which
// the Worker never uses and would otherwise carry (4 KiB gzipped).
import { drizzle as drizzleLibsql } from "drizzle-orm/libsql/http";
import type { LibSQLDatabase } from "drizzle-orm/libsql";
import * as schema from "../../schema/index";

/**
 * The database as the services see it: what drizzle's libSQL and D1 databases have in
 * common, the SQLite query builder (its run() results typed as unknown: they differ by
 * driver) and `batch`. Services use `.returning()` rather than run() results.
 */
export type Db = BaseSQLiteDatabase<"async", unknown, typeof schema> & Pick<LibSQLDatabase<typeof schema>, "batch">;

/**
 * The driver drizzle was given: `$client`, drizzle's own public field on what drizzle()
 * returns. Read here rather than added to Db's type: an intersection on Db made every
 * query's type a quarter more work for the compiler (typecheck +4 s).
 */
function driverOf(db: Db): Client | D1Database {
  return (db as Db & { $client: Client | D1Database }).$client;
}

/** A libSQL client as drizzle's libSQL database (a Db, which the migrator also takes). */
export function dbFromLibsql(client: Client): LibSQLDatabase<typeof schema> {
  return drizzleLibsql(client, { schema, casing: "snake_case" });
}

export function dbFromD1(binding: D1Database): Db {
  // @cloudflare/workers-types' D1Database and the one drizzle's d1 driver declares are the
  // same binding described by two packages.
  return drizzleD1(binding as Parameters<typeof drizzleD1>[0], { schema, casing: "snake_case" });
}

/**
 * A value built once per database handle, e.g. templates of statements. Building SQL with
 * the query builder costs about as much as an embedded database takes to run it, so the hot
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

// ---------------------------------------------------------------------------------------
// Batches of statements built once. drizzle's `.prepare()` binds placeholders for a
// statement run alone, but its `batch` takes only queries built for the call: it has no
// public way to bind a prepared statement's placeholders inside a batch. The hot paths
// (a chat message: two batches of about ten statements) therefore take the SQL and
// parameters drizzle builds (`toSQL()`, placeholders included), fill the placeholders with
// drizzle's `fillPlaceholders`, and run the batch with the driver's own public API:
// `Client.batch` on libSQL, `D1Database.batch` on D1. A select's rows come back named by
// the fields it was given (selectTemplate), as the driver returns their values: drizzle's
// decoding (timestamps to Date, and the like) is not applied.
// ---------------------------------------------------------------------------------------

/** Something that can say its SQL: a query-builder query, with or without placeholders. */
export interface ToSql {
  toSQL(): Query;
}

/** A row as a statement's reader sees it: each selected value under the name of its field. */
export type Row<K extends string> = Record<K, unknown>;

/** One statement of a Batch: its SQL, its values, the names of its selected fields, and how its rows are read. */
export interface Step<R = void> {
  sql: string;
  args: unknown[];
  fields: readonly string[];
  read(rows: Row<string>[]): R;
}

/**
 * A statement built once with sql.placeholder()s, to be bound per call (see Batch). A
 * select's template carries the names of its fields (`K`), in the order selected.
 */
export interface Template<K extends string = never> extends Query {
  readonly fields: readonly K[];
  /** Its parameters' values for a call: see fillerOf. */
  readonly fill: (values: Record<string, unknown>) => unknown[];
}

/**
 * How a statement's parameters are filled, decided once for the statement, as drizzle's
 * fillPlaceholders decides it: a placeholder takes its value by name; a placeholder a column
 * encodes (an insert's values) takes it through the column's encoder; anything else is a
 * value already. fillPlaceholders decides it again for every parameter of every call,
 * through drizzle's `is`, which walks class chains: in profiles of the chat mix
 * (BENCHMARKS.md), binding a message's statements took about 68 µs of its main thread that
 * way and 36 this way.
 */
function fillerOf(params: readonly unknown[]): Template["fill"] {
  const fillers = params.map((p): ((values: Record<string, unknown>) => unknown) => {
    const placeholder = is(p, Placeholder) ? p : is(p, Param) && is(p.value, Placeholder) ? p.value : undefined;
    if (!placeholder) return () => p;
    const { name } = placeholder;
    const encoder = placeholder === p ? undefined : (p as Param).encoder;
    return (values) => {
      if (!(name in values)) throw new Error(`No value for placeholder "${name}" was provided`);
      return encoder ? encoder.mapToDriverValue(values[name]) : values[name];
    };
  });
  return (values) => fillers.map((fill) => fill(values));
}

/** A statement that selects nothing to read (an insert, update or delete without returning). */
export function template(query: ToSql): Template {
  const built = query.toSQL();
  return { ...built, fields: [], fill: fillerOf(built.params) };
}

/**
 * A select (or a write's `returning`) built once, whose rows are read by the names of
 * `fields`: the same object the query selects, so the names and the columns cannot drift.
 */
export function selectTemplate<K extends string>(fields: Record<K, unknown>, query: ToSql): Template<K> {
  const built = query.toSQL();
  return { ...built, fields: Object.keys(fields) as K[], fill: fillerOf(built.params) };
}

const ignoreRows = () => undefined;

/** The template with its placeholders filled from `values`; its rows read by `read`, if at all. */
export function bind(statement: Template<string>, values: Record<string, unknown>): Step;
export function bind<K extends string, R>(statement: Template<K>, values: Record<string, unknown>, read: (rows: Row<K>[]) => R): Step<R>;
export function bind<K extends string, R>(statement: Template<K>, values: Record<string, unknown>, read?: (rows: Row<K>[]) => R): Step<R | undefined> {
  return { sql: statement.sql, args: statement.fill(values), fields: statement.fields, read: (read ?? ignoreRows) as Step<R>["read"] };
}

/** A query built for this call (no placeholders) that selects nothing to read, as a step of a Batch. */
export function step(query: ToSql): Step {
  const { sql, params } = query.toSQL();
  return { sql, args: fillPlaceholders(params, {}), fields: [], read: ignoreRows };
}

/** A select built for this call, its rows read by the names of `fields` (the object it selects). */
export function selectStep<K extends string, R>(fields: Record<K, unknown>, query: ToSql, read: (rows: Row<K>[]) => R): Step<R> {
  const { sql, params } = query.toSQL();
  return { sql, args: fillPlaceholders(params, {}), fields: Object.keys(fields), read: read as Step<R>["read"] };
}

/** A reader of every row, each made by `row` from its named values. */
export function eachRow<K extends string, T>(row: (values: Row<K>) => T): (rows: Row<K>[]) => T[] {
  return (rows) => rows.map(row);
}

/** A reader of the first row, made by `row`, or undefined when there is none. */
export function firstRow<K extends string, T>(row: (values: Row<K>) => T): (rows: Row<K>[]) => T | undefined {
  return (rows) => (rows.length === 0 ? undefined : row(rows[0]!));
}

/** What `Batch.add` returns: the name of a step's result once the batch has run. */
export interface Slot<R> {
  readonly index: number;
  /** Carries the result's type; never set. */
  readonly result?: R;
}

/** A batch's results, each read by the slot its step was added as. */
export type Results = <R>(slot: Slot<R>) => R;

/**
 * Statements that run in one transaction, in the order added: all kept, or none. Each
 * `add` returns the slot its typed result is read by, so a caller names what it reads
 * rather than counting positions.
 */
export class Batch {
  readonly #steps: Step<unknown>[] = [];

  add<R>(statement: Step<R>): Slot<R> {
    return { index: this.#steps.push(statement) - 1 };
  }

  async run(db: Db): Promise<Results> {
    const steps = this.#steps;
    const rows = await runStatements(driverOf(db), steps);
    const results = steps.map((s, i) => s.read(rows[i]!));
    return <R>(slot: Slot<R>) => results[slot.index] as R;
  }
}

/** Each step's rows, named by its fields: by position from libSQL's rows, by key from D1's objects. */
async function runStatements(client: Client | D1Database, steps: Step<unknown>[]): Promise<Row<string>[][]> {
  if (isD1(client)) {
    const results = await client.batch(steps.map((s) => client.prepare(s.sql).bind(...s.args)));
    return results.map((r, i) => named(steps[i]!, (r.results as Record<string, unknown>[]).map((row) => Object.values(row))));
  }
  const results = await client.batch(steps.map((s) => ({ sql: s.sql, args: s.args as InValue[] })));
  return results.map((r, i) => named(steps[i]!, r.rows as unknown as ArrayLike<unknown>[]));
}

function named(step: Step<unknown>, rows: ArrayLike<unknown>[]): Row<string>[] {
  const { fields } = step;
  if (fields.length === 0) return rows as unknown as Row<string>[];
  return rows.map((values) => {
    // D1 gives each row as an object keyed by column name: two columns of one name would be one.
    if (values.length !== fields.length) throw new Error(`a statement selected ${values.length} columns for ${fields.length} fields (${fields.join(", ")}): give each column a name of its own`);
    const row: Row<string> = {};
    for (let i = 0; i < fields.length; i++) row[fields[i]!] = values[i];
    return row;
  });
}

function isD1(client: Client | D1Database): client is D1Database {
  return !("execute" in client);
}

/** A keyset position for paging: a time (ms since the epoch) and an id that breaks ties. */
export interface Position {
  at: number;
  id: string;
}
