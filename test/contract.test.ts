import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream, type UpstreamMode } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";
import { parseSse, type SseEvent } from "./support/sse";

// The contract walk: for every operation in /openapi.json, send the documented examples
// and the boundary values of every parameter and body field (at and just past each
// length and range, each enum value and one that is not, each required field missing,
// each field with the wrong type) with real credentials, and check every reply against
// the document: its status is listed for the operation, and its body is valid, by a
// JSON-Schema validator, against the schema listed for that status and content type. A
// request the document calls valid must not be refused with 400 (bar the semantic checks
// listed below); one it calls invalid must be. A streamed reply (text/event-stream) is
// checked event by event, against the schema the document gives one event, with the JSON
// each event's data carries checked against its contentSchema.

type Schema = Record<string, any>;
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }>; headers?: Record<string, { required?: boolean }> }>;
  security?: unknown[];
}

/** One request of the walk. `body` undefined: none is sent. */
interface Case {
  name: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body?: unknown;
  credential: "jwt" | "api-key" | "none";
  /** The path parameters are the documented example: send a real id (see `fixtures`) instead. */
  realIds: boolean;
  /** How the model upstream behaves for this request (default: it answers). */
  upstream?: UpstreamMode;
}

/** A finding: a reply that contradicts the document. */
interface Finding {
  operation: string;
  case: string;
  status: number;
  problem: string;
}

const OMIT = Symbol("omit");

/** One request with node:http, which sends any method (fetch refuses TRACE). */
function rawRequest(url: string, method: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Record<string, string | undefined>; body: string }>((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string | undefined>, body }));
    });
    req.on("error", reject);
    req.end();
  });
}
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

let up: FakeUpstream;
let h: Harness;
let doc: Doc;
let ajv: Ajv2020;
let jwt: string;
let apiKey: string;
let nextPlantId = 1;
const findings: Finding[] = [];
let requests = 0;
let operations = 0;
const tally = new Map<string, number>();
/** The kinds of streamed events the walk saw and checked, per operation. */
const streamedKinds = new Set<string>();

beforeAll(async () => {
  up = await startFakeUpstream({ record: false });
  h = await createHarness({
    env: { SVC_MODEL_BASE_URL: up.baseUrl, STT_BASE_URL: up.baseUrl, DAILY_CREDITS: "100000", RATE_LIMIT_PER_MINUTE: "1000000", MODEL_TIMEOUT_MS: "5000" },
  });
  doc = (await (await h.request("/openapi.json")).json()) as Doc;
  ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc as object, "openapi");
});
afterAll(async () => {
  await h.close();
  await up.close();
});

// --- schemas -------------------------------------------------------------------------------

function deref(schema: Schema): Schema {
  let s = schema;
  while (s && typeof s.$ref === "string") s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")]!;
  return s;
}

const validators = new Map<string, ReturnType<Ajv2020["compile"]>>();
/** Validates against the schema at this JSON pointer into the document (its $refs resolve there). */
function validatorAt(at: string) {
  let validate = validators.get(at);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi#${at}` });
    validators.set(at, validate);
  }
  return validate;
}

/** The node of the document at a JSON pointer (`/components/schemas/Error`). */
function nodeAt(at: string): Schema {
  let node: any = doc;
  for (const part of at.split("/").slice(1)) node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return node as Schema;
}

/**
 * The string values in `value` that the schema at `at` says carry JSON (contentMediaType
 * application/json), each with the pointer of its contentSchema. JSON Schema validators only
 * annotate those keywords; the branches of oneOf/anyOf followed are the ones `value` matches.
 */
function jsonContents(at: string, value: unknown): Array<{ at: string; text: string }> {
  const schema = nodeAt(at);
  if (!schema || typeof schema !== "object") return [];
  if (typeof schema.$ref === "string") return jsonContents(schema.$ref.slice(1), value);
  const found: Array<{ at: string; text: string }> = [];
  if (schema.contentMediaType === "application/json" && schema.contentSchema && typeof value === "string") {
    found.push({ at: `${at}/contentSchema`, text: value });
  }
  for (const keyword of ["allOf", "anyOf", "oneOf"]) {
    (schema[keyword] ?? []).forEach((_: unknown, i: number) => {
      const branch = `${at}/${keyword}/${i}`;
      if (keyword === "allOf" || validatorAt(branch)(value)) found.push(...jsonContents(branch, value));
    });
  }
  if (value && typeof value === "object" && schema.properties) {
    for (const [name, v] of Object.entries(value)) {
      if (schema.properties[name]) found.push(...jsonContents(`${at}/properties/${pointer(name)}`, v));
    }
  }
  return found;
}

/** Why a streamed event contradicts the schema of one event at `at`, or null. */
function eventProblem(at: string, event: SseEvent): string | null {
  const validate = validatorAt(at);
  if (!validate(event)) return ajv.errorsText(validate.errors, { dataVar: "event" });
  for (const content of jsonContents(at, event)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(content.text);
    } catch {
      return `its data is not the JSON the document says (${content.at})`;
    }
    const validateContent = validatorAt(content.at);
    if (!validateContent(parsed)) return `its data contradicts ${content.at}: ${ajv.errorsText(validateContent.errors, { dataVar: "data" })}`;
  }
  return null;
}

/** What kind of event this is, for the walk's count of what it checked. */
function eventKind(event: SseEvent): string {
  if (event.event !== "message") return `event: ${event.event}`;
  if (event.data === "[DONE]") return "data: [DONE]";
  return (JSON.parse(event.data) as { error?: unknown }).error ? "data: an error" : "data";
}

const typeOf = (schema: Schema): string | undefined =>
  Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;

/** A value the schema accepts: its example, else one built from its keywords. */
function sample(raw: Schema): unknown {
  const schema = deref(raw);
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  switch (typeOf(schema)) {
    case "string":
      return "x".repeat(Math.max(schema.minLength ?? 1, 1));
    case "integer":
      return schema.minimum ?? 1;
    case "number":
      return schema.minimum ?? 0.5;
    case "boolean":
      return true;
    case "array":
      return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => sample(schema.items ?? {}));
    case "object": {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = sample(schema.properties[name]);
      return out;
    }
    default:
      return "x";
  }
}

/** A string of `length` code points built from the characters of `seed`. */
function stringOf(seed: unknown, length: number): string {
  const chars = Array.from(typeof seed === "string" && seed.length > 0 ? seed : "x");
  return Array.from({ length }, (_, i) => chars[i % chars.length]).join("");
}

/**
 * Values at and just past the schema's bounds, each enum value and one outside, the wrong
 * type and null. Whether each is valid is decided by the validator, not here.
 */
function variants(raw: Schema, inQuery: boolean): Array<{ label: string; value: unknown }> {
  const schema = deref(raw);
  const base = sample(schema);
  const out: Array<{ label: string; value: unknown }> = [];
  const type = typeOf(schema);
  if (schema.enum) {
    for (const v of schema.enum) out.push({ label: `= ${JSON.stringify(v)}`, value: v });
    out.push({ label: "not in the enum", value: type === "string" ? "not-one-of-them" : 987654 });
  }
  if (type === "string") {
    const { minLength, maxLength } = schema;
    if (minLength !== undefined) {
      out.push({ label: `${minLength} characters (minLength)`, value: stringOf(base, minLength) });
      if (minLength > 0) out.push({ label: `${minLength - 1} characters (minLength - 1)`, value: stringOf(base, minLength - 1) });
    }
    if (maxLength !== undefined) {
      out.push({ label: `${maxLength} characters (maxLength)`, value: stringOf(base, maxLength) });
      out.push({ label: `${maxLength + 1} characters (maxLength + 1)`, value: stringOf(base, maxLength + 1) });
    }
    if (maxLength === undefined) out.push({ label: "10,000 characters", value: stringOf(base, 10_000) });
    out.push({ label: "a control character", value: `${stringOf(base, Math.max((minLength ?? 1) - 1, 0))}\u0001`.slice(-(maxLength ?? 10)) });
    if ((minLength ?? 0) >= 1) out.push({ label: "only spaces", value: " ".repeat(Math.min(Math.max(minLength, 3), maxLength ?? 3)) });
    if (!inQuery) out.push({ label: "a number instead of a string", value: 12345 });
  }
  if (type === "integer" || type === "number") {
    const { minimum, maximum } = schema;
    if (minimum !== undefined) out.push({ label: `${minimum} (minimum)`, value: minimum }, { label: `${minimum - 1} (minimum - 1)`, value: minimum - 1 });
    if (maximum !== undefined) out.push({ label: `${maximum} (maximum)`, value: maximum }, { label: `${maximum + 1} (maximum + 1)`, value: maximum + 1 });
    if (type === "integer") out.push({ label: "a fraction", value: 1.5 });
    out.push({ label: "text instead of a number", value: "abc" });
  }
  if (type === "boolean") out.push({ label: "text instead of a boolean", value: "yes" });
  if (type === "array") out.push({ label: "an object instead of an array", value: {} });
  if (type === "object") out.push({ label: "a string instead of an object", value: "x" });
  if (!inQuery && !(Array.isArray(schema.type) && schema.type.includes("null"))) out.push({ label: "null", value: null });
  return out;
}

// --- the requests of each operation --------------------------------------------------------

const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

/** Request bodies the sampler cannot know are meaningful (chat needs a user message). */
const baseBodies: Record<string, () => unknown> = {
  "POST /plants": () => ({ id: nextPlantId++, name: "Monstera", tag: "tropical" }),
  "POST /chat/send": () => ({ message: "How often should I water a monstera?" }),
  "POST /v1/chat/completions": () => ({ model: "svc-70b", messages: [{ role: "user", content: "Hello" }] }),
  "PATCH /me": () => ({ name: "Ada" }),
  "PATCH /contexts/{id}": () => ({ name: "Renamed" }),
  "POST /groups": () => ({ name: `Group ${nextPlantId++}` }),
  "PATCH /groups/{id}": () => ({ name: `Group ${nextPlantId++}` }),
};

async function json<T>(res: Response): Promise<T> {
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return (await res.json()) as T;
}
const newContext = async () => (await json<{ id: string }>(await h.request("/contexts", { method: "POST", token: jwt, json: { name: "walk" } }))).id;

/** Real ids for path parameters, made fresh for each request that needs one. */
const fixtures: Record<string, () => Promise<string>> = {
  "/plants/{id}": async () => {
    const id = nextPlantId++;
    await json(await h.request("/plants", { method: "POST", token: jwt, json: { id, name: "fixture" } }));
    return String(id);
  },
  "/keys/{id}": async () => (await json<{ id: string }>(await h.request("/keys", { method: "POST", token: jwt, json: {} }))).id,
  "/contexts/{id}": newContext,
  "/contexts/{id}/share": newContext,
  "/groups/{id}": async () =>
    (await json<{ id: string }>(await h.request("/groups", { method: "POST", token: jwt, json: { name: `g${nextPlantId++}` } }))).id,
  "/shared/{token}": async () =>
    (await json<{ token: string }>(await h.request(`/contexts/${await newContext()}/share`, { method: "POST", token: jwt }))).token,
  "/v1/models/{model}": async () => "svc-70b",
};

/** The streamed requests (`stream: true`, and the stream's options) of operations that can stream. */
const streamBodies: Record<string, Array<Record<string, unknown>>> = {
  "POST /chat/send": [{ stream: true }],
  "POST /v1/chat/completions": [{ stream: true }, { stream: true, stream_options: { include_usage: true } }],
};

/**
 * Schema-valid requests the server may still refuse with 400, because what they name must
 * also exist: a cursor it gave out, a message of the context, a model it knows (or, for
 * parentId, a contextId beside it).
 */
const semantic400: Record<string, string[]> = {
  "GET /plants": ["cursor"],
  "GET /contexts": ["cursor"],
  "GET /shares": ["cursor"],
  "GET /usage/messages": ["cursor"],
  "GET /contexts/{id}": ["before"],
  "POST /chat/send": ["model", "parentId"],
  "POST /contexts/{id}/messages/{messageId}/regenerate": ["model"],
  // The models are the deployment's configuration: the document cannot list them.
  "PATCH /me": ["defaultModel"],
};

function casesFor(method: string, path: string, op: Operation): Case[] {
  const params = op.parameters ?? [];
  const bodySchema = op.requestBody?.content["application/json"]?.schema;
  const baseBody = () => baseBodies[key(method, path)]?.() ?? (bodySchema ? sample(bodySchema) : undefined);
  const base = (): Case => {
    const c: Case = { name: "the documented example", params: {}, query: {}, headers: {}, credential: op.security ? "jwt" : "none", realIds: true };
    for (const p of params) {
      const value = sample(p.schema);
      if (p.in === "path") c.params[p.name] = String(value);
      else if (p.required) (p.in === "query" ? c.query : c.headers)[p.name] = value as string;
    }
    const body = baseBody();
    if (body !== undefined) c.body = structuredClone(body);
    return c;
  };
  const cases: Case[] = [base()];
  if (params.some((p) => p.in === "path")) cases.push({ ...base(), name: "the documented example of the path, which names nothing", realIds: false });
  if (op.security) {
    cases.push({ ...base(), name: "with an API key", credential: "api-key" });
    cases.push({ ...base(), name: "without credentials", credential: "none" });
  }
  // A request whose body asks for a stream (a GET that streams has no body to ask with).
  if (op.responses["200"]?.content?.["text/event-stream"] && bodySchema) {
    for (const options of streamBodies[key(method, path)] ?? [{ stream: true }]) {
      const streamed = (): Case => ({ ...base(), body: { ...(baseBody() as object), ...options } });
      cases.push({ ...streamed(), name: `streamed: ${JSON.stringify(options)}` });
      cases.push({ ...streamed(), name: `streamed: ${JSON.stringify(options)}, the model failing after its first pieces`, upstream: "fail-mid-stream" });
    }
  }

  for (const p of params) {
    for (const v of variants(p.schema, true)) {
      // An empty path segment is another path (`/contexts/`), not this operation.
      if (p.in === "path" && v.value === "") continue;
      const c = base();
      c.name = `${p.in} ${p.name}: ${v.label}`;
      if (p.in === "path") {
        c.params[p.name] = String(v.value);
        c.realIds = false;
      } else (p.in === "query" ? c.query : c.headers)[p.name] = v.value as string;
      cases.push(c);
    }
    if (p.required && p.in !== "path") {
      const c = base();
      c.name = `${p.in} ${p.name}: missing`;
      delete (p.in === "query" ? c.query : c.headers)[p.name];
      cases.push(c);
    }
  }

  if (bodySchema) {
    const walk = (schema: Schema, at: string[], depth: number) => {
      const s = deref(schema);
      if (typeOf(s) !== "object" || !s.properties || depth > 2) return;
      for (const [name, prop] of Object.entries<Schema>(s.properties)) {
        const here = [...at, name];
        for (const v of variants(prop, false)) cases.push(withBody(base(), here, v.value, `body ${here.join(".")}: ${v.label}`));
        if ((s.required ?? []).includes(name)) cases.push(withBody(base(), here, OMIT, `body ${here.join(".")}: missing`));
        walk(prop, here, depth + 1);
      }
    };
    walk(bodySchema, [], 0);
    cases.push({ ...base(), name: "body: an array instead of an object", body: [] });
    if (op.requestBody?.required) cases.push({ ...base(), name: "body: none", body: undefined });
  }
  return cases;
}

/** The case with the body field at `at` set to `value` (objects on the way are made). */
function withBody(c: Case, at: string[], value: unknown, name: string): Case {
  const body = (c.body && typeof c.body === "object" ? c.body : {}) as Record<string, unknown>;
  let target = body;
  for (const part of at.slice(0, -1)) {
    if (typeof target[part] !== "object" || target[part] === null) target[part] = {};
    target = target[part] as Record<string, unknown>;
  }
  if (value === OMIT) delete target[at.at(-1)!];
  else target[at.at(-1)!] = value;
  return { ...c, body, name };
}

// --- validity of a request, by the document ------------------------------------------------

/** A query value as the document's schema reads it (query strings carry text only). */
function fromQuery(schema: Schema, text: string): unknown {
  const type = typeOf(deref(schema));
  if ((type === "integer" || type === "number") && /^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (type === "boolean" && (text === "true" || text === "false")) return text === "true";
  return text;
}

/** The document's own verdict on a request: null when valid, else why not. */
function invalidity(method: string, path: string, op: Operation, c: Case): string | null {
  const base = pointer("paths", path, method);
  for (const [i, p] of (op.parameters ?? []).entries()) {
    const bag = p.in === "path" ? c.params : p.in === "query" ? c.query : c.headers;
    const raw = bag[p.name];
    if (raw === undefined) {
      if (p.required) return `${p.in} ${p.name} missing`;
      continue;
    }
    const value = p.in === "header" ? raw : fromQuery(p.schema, String(raw));
    if (!validatorAt(`/${base}/parameters/${i}/schema`)(value)) return `${p.in} ${p.name} invalid`;
  }
  if (op.requestBody) {
    if (c.body === undefined) return op.requestBody.required ? "body missing" : null;
    const validate = validatorAt(`/${base}/${pointer("requestBody", "content", "application/json", "schema")}`);
    if (!validate(c.body)) return `body invalid: ${ajv.errorsText(validate.errors)}`;
  }
  return null;
}

// --- sending and checking ------------------------------------------------------------------

async function send(method: string, path: string, c: Case): Promise<Response> {
  let url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(c.params[name] ?? ""));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(c.query)) query.set(name, typeof value === "string" ? value : JSON.stringify(value));
  if ([...query].length > 0) url += `?${query}`;
  const headers = new Headers(c.headers);
  if (c.credential === "jwt") headers.set("Authorization", `Bearer ${jwt}`);
  if (c.credential === "api-key") headers.set("Authorization", `Bearer ${apiKey}`);
  const init: RequestInit = { method: method.toUpperCase(), headers };
  if (c.body !== undefined) {
    headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(c.body);
  }
  requests++;
  return h.app.request(url, init);
}

async function check(method: string, path: string, op: Operation, c: Case) {
  const operation = key(method, path);
  const fixture = fixtures[path];
  if (fixture && c.realIds) {
    const name = op.parameters!.find((p) => p.in === "path")!.name;
    c.params[name] = await fixture();
  }
  const verdict = invalidity(method, path, op, c);
  up.mode = c.upstream ?? "ok";
  let res: Response;
  let text: string;
  try {
    res = await send(method, path, c);
    text = await res.text(); // a stream is read to its end before the upstream is set back
  } finally {
    up.mode = "ok";
  }
  tally.set(`${verdict === null ? "valid" : "invalid"} ${res.status}`, (tally.get(`${verdict === null ? "valid" : "invalid"} ${res.status}`) ?? 0) + 1);
  if (process.env.WALK_DEBUG) console.log(operation, c.name, verdict, res.status, text.slice(0, 150));
  const found = (problem: string) => findings.push({ operation, case: c.name, status: res.status, problem });

  const documented = op.responses[String(res.status)];
  if (!documented) return found(`status ${res.status} is not documented: ${text.slice(0, 200)}`);
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (header.required && !res.headers.has(name)) found(`the documented header ${name} is missing`);
  }
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  if (documented.content) {
    const media = documented.content[type];
    if (!media) return found(`content type '${type}' is not documented for ${res.status}`);
    if (type === "application/json") {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return found("the body is not JSON");
      }
      const validate = validatorAt(`/${pointer("paths", path, method, "responses", String(res.status), "content", type, "schema")}`);
      if (!validate(body)) return found(`the body contradicts the schema: ${ajv.errorsText(validate.errors)}: ${text.slice(0, 200)}`);
    } else if (type === "text/event-stream") {
      const events = parseSse(text);
      if (events.length === 0) return found("the stream has no events");
      const at = `/${pointer("paths", path, method, "responses", String(res.status), "content", type, "schema")}`;
      for (const [i, event] of events.entries()) {
        const problem = eventProblem(at, event);
        if (problem) return found(`event ${i + 1} of the stream contradicts the document: ${problem}: ${JSON.stringify(event).slice(0, 200)}`);
        streamedKinds.add(`${operation} ${eventKind(event)}`);
      }
    }
  } else if (text !== "") return found(`status ${res.status} is documented without a body, but one came`);

  if (res.status >= 400) {
    const body = JSON.parse(text) as { message?: string; error?: { message?: string } };
    const message = body.message ?? body.error?.message ?? "";
    // What the client sent is quoted as a short printable excerpt, never whole.
    if (message.length > 400 || /\p{Cc}/u.test(message)) found(`the message quotes too much or unprintable input: ${JSON.stringify(message.slice(0, 120))}…`);
  }

  if (c.credential === "none" && op.security) {
    if (res.status !== 401) found(`expected 401 without credentials`);
    return;
  }
  if (verdict === null && res.status === 400) {
    const allowed = semantic400[operation] ?? [];
    const named = allowed.some((param) => c.name.includes(` ${param}:`) || c.name.includes(`.${param}:`));
    if (!named) found(`a request the document calls valid was refused: ${text.slice(0, 200)}`);
  }
  if (verdict !== null && res.status < 400) found(`a request the document calls invalid (${verdict}) was accepted`);
  if (verdict !== null && res.status >= 500) found(`a request the document calls invalid (${verdict}) failed with ${res.status}`);
}

describe("the contract walk over /openapi.json", () => {
  it("answers every operation's examples and boundary values as the document says", async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        // A user of its own for each operation, so that one's state (a default model, 25
        // keys) does not decide another's replies.
        jwt = await h.signIn(`walker ${operations}`);
        apiKey = (await json<{ key: string }>(await h.request("/keys", { method: "POST", token: jwt, json: {} }))).key;
        for (const c of casesFor(method, path, op)) await check(method, path, op, c);
      }
    }
    console.log(`contract walk: ${operations} operations, ${requests} requests`, Object.fromEntries([...tally].sort()));
    expect(operations).toBeGreaterThanOrEqual(31);
    expect(requests).toBeGreaterThan(350);
    expect(findings.map((f) => `${f.operation} | ${f.case}: ${f.problem}`)).toEqual([]);
    // Each kind of event of both streams was sent and checked.
    expect([...streamedKinds].sort()).toEqual([
      "POST /chat/send data",
      "POST /chat/send event: done",
      "POST /chat/send event: error",
      "POST /v1/chat/completions data",
      "POST /v1/chat/completions data: [DONE]",
      "POST /v1/chat/completions data: an error",
    ]);
    // Every operation's boundary values: a few thousand requests (the operator's console added a dozen operations).
  }, 60_000);

  it("has every operation of the document described in docs/api.md", () => {
    const reference = readFileSync(new URL("../docs/api.md", import.meta.url), "utf8");
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(operations.length).toBeGreaterThanOrEqual(31);
    expect(operations.filter((op) => !reference.includes(`\`${op}\``))).toEqual([]);
  });

  it("documents only examples that its own schemas accept", () => {
    const wrong: string[] = [];
    let checked = 0;
    const visit = (node: unknown, at: string) => {
      if (!node || typeof node !== "object") return;
      const schema = node as Schema;
      if (schema.example !== undefined && typeof schema.type === "string" && !schema.properties && !schema.$ref) {
        const { example, ...rest } = schema;
        checked++;
        if (!ajv.validate(rest, example)) wrong.push(`${at}: ${JSON.stringify(example)} (${ajv.errorsText()})`);
      }
      for (const [k, v] of Object.entries(schema)) visit(v, `${at}/${k}`);
    };
    visit(doc, "");
    expect(checked).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });

  it("has only patterns that JavaScript (u flag) and Python's re both compile", () => {
    // Clients generated from the document compile its patterns with their language's regex
    // engine: JavaScript's with the `u` flag (as JSON Schema validators do) and Python's `re`,
    // which has no Unicode property classes (\p{L}). Warnings (FutureWarning about a class
    // that a later Python will read otherwise) count as failures.
    const patterns = new Map<string, string>();
    const visit = (node: unknown, at: string) => {
      if (!node || typeof node !== "object") return;
      for (const [k, v] of Object.entries(node)) {
        if (k === "pattern" && typeof v === "string") patterns.set(`${at}/pattern`, v);
        else visit(v, `${at}/${k}`);
      }
    };
    visit(doc, "");
    expect(patterns.size).toBeGreaterThan(20);

    const javascript: string[] = [];
    for (const [at, pattern] of patterns) {
      try {
        new RegExp(pattern, "u");
      } catch (err) {
        javascript.push(`${at}: ${JSON.stringify(pattern)}: ${(err as Error).message}`);
      }
    }
    const script = [
      "import json, re, sys, warnings",
      "warnings.simplefilter('error')",
      "failed = []",
      "for at, pattern in json.load(sys.stdin):",
      "    try:",
      "        re.compile(pattern)",
      "    except Exception as err:",
      "        failed.append(f'{at}: {json.dumps(pattern)}: {err}')",
      "print(json.dumps(failed))",
    ].join("\n");
    const run = spawnSync("python3", ["-c", script], { input: JSON.stringify([...patterns]), encoding: "utf8" });
    if (run.error) throw new Error(`this check compiles the patterns with Python's re: install python3 (${run.error.message})`);
    expect(run.status, run.stderr).toBe(0);
    const python = JSON.parse(run.stdout) as string[];
    expect({ javascript, python }).toEqual({ javascript: [], python: [] });
  });

  it("answers every method a documented path does not serve with 405 and the Allow it documents", async () => {
    const mismatches: string[] = [];
    const token = await h.signIn("method prober");
    const base = await h.listen();
    for (const [path, ops] of Object.entries(doc.paths)) {
      const served = Object.keys(ops).map((m) => m.toUpperCase());
      const url = path.replace(/\{\w+\}/g, "x1");
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE"].filter((m) => !served.includes(m))) {
        requests++;
        // Over a real socket: fetch refuses to send TRACE.
        const res = await rawRequest(`${base}${url}`, method, { Authorization: `Bearer ${token}` });
        const allow = (res.headers.allow ?? "").split(", ").filter((m) => m !== "HEAD");
        const body = JSON.parse(res.body) as { error: unknown };
        const shapeOk = path.startsWith("/v1/") ? typeof body.error === "object" : body.error === 405;
        if (res.status !== 405 || allow.sort().join() !== [...served].sort().join() || !shapeOk) {
          mismatches.push(`${method} ${url}: ${res.status} Allow: ${res.headers.allow} ${JSON.stringify(body).slice(0, 100)}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
  });
});
