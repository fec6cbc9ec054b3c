// GET /contexts/search through the whole app (JWT, routing, zod, FTS5 query, JSON) over
// 100,000 messages of one user (plus 50,000 of other users), against a floor on the same
// libSQL client: the bare FTS5 MATCH with the same rank window, rowids only. Sequential
// requests, so the figures are latencies. Target: p99 well under 50 ms.
// npx tsx bench/search.ts (BENCH_MESSAGES, BENCH_OTHER_MESSAGES, BENCH_QUERIES to resize).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app";
import { userIdFor } from "../src/platform/auth/identity";
import { openDatabase } from "../src/platform/node/open-database";
import { INDEX_BATCH, indexPendingSearch, matchExpression, RANK_WINDOW, searchTerms } from "../src/features/contexts/search";
import { BENCH_ISSUER, benchRuntime, benchToken, machine, writeSection } from "./support";

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const OTHER_MESSAGES = Number(process.env.BENCH_OTHER_MESSAGES ?? 50_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 400);
const PER_CONTEXT = 100;

const dir = mkdtempSync(join(tmpdir(), "bench-search-"));
const { client, db } = await openDatabase(`file:${join(dir, "bench.db")}`);

// A deterministic generator (mulberry32), so every run searches the same text.
let seed = 0x5eed;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

// A vocabulary with a Zipf distribution, like natural text: a few words are everywhere
// (the first, "the", is in most messages), most are rare.
const common = "the a to of and is it in my for how should i you water light soil leaves plant pot".split(" ");
const plants = "monstera fern orchid cactus succulent basil tomato rose lavender begonia pothos ficus aloe mint thyme".split(" ");
const syllables = "ka lo mi ne ru sa ti vo ze pa qui bra dor fen gal hin jup lek mor nix".split(" ");
const vocabulary = [...common, ...plants];
while (vocabulary.length < 20_000) {
  const n = 2 + Math.floor(random() * 3);
  let w = "";
  for (let i = 0; i < n; i++) w += syllables[Math.floor(random() * syllables.length)];
  vocabulary.push(w);
}
const harmonic = vocabulary.reduce((sum, _w, i) => sum + 1 / (i + 1), 0);
const cumulative: number[] = [];
vocabulary.reduce((sum, _w, i) => {
  cumulative.push(sum + 1 / (i + 1) / harmonic);
  return sum + 1 / (i + 1) / harmonic;
}, 0);
const word = () => {
  const r = random();
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! < r) lo = mid + 1;
    else hi = mid;
  }
  return vocabulary[lo]!;
};
const sentence = () => Array.from({ length: 8 + Math.floor(random() * 50) }, word).join(" ");

const issuer = BENCH_ISSUER;
async function seedUser(name: string, messages: number) {
  const userId = await userIdFor(issuer, `user:${name}`);
  await client.execute({
    sql: "insert into users (id, issuer, subject, name, created_at) values (?, ?, ?, ?, 0)",
    args: [userId, issuer, `user:${name}`, name],
  });
  const start = Date.parse("2026-01-01T00:00:00.000Z");
  for (let c = 0; c * PER_CONTEXT < messages; c++) {
    const contextId = `ctx_${name}_${c}`;
    const n = Math.min(PER_CONTEXT, messages - c * PER_CONTEXT);
    const at = start + c * 1000 * PER_CONTEXT;
    const statements: Array<{ sql: string; args: Array<string | number | null> }> = [
      {
        sql: "insert into contexts (id, user_id, name, message_count, created_at, updated_at) values (?, ?, ?, ?, ?, ?)",
        args: [contextId, userId, `${word()} ${word()} ${plants[c % plants.length]}`, n, at, at + n],
      },
    ];
    for (let i = 0; i < n; i++) {
      statements.push({
        sql: "insert into messages (id, context_id, user_id, role, content, model, created_at) values (?, ?, ?, ?, ?, ?, ?)",
        args: [`msg_${name}_${c}_${i}`, contextId, userId, i % 2 ? "assistant" : "user", sentence(), i % 2 ? "svc-70b" : null, at + i],
      });
    }
    await client.batch(statements, "write");
  }
  return userId;
}

const seedStart = performance.now();
const userId = await seedUser("bench", MESSAGES);
for (let u = 0; u < 5; u++) await seedUser(`other${u}`, OTHER_MESSAGES / 5);
const seedSeconds = (performance.now() - seedStart) / 1000;
// New entries wait to be indexed; index them in bulk, as the server's background job does.
const indexStart = performance.now();
while ((await indexPendingSearch(db)) > 0);
const indexSeconds = (performance.now() - indexStart) / 1000;

const token = await benchToken("user:bench");
const runtime = await benchRuntime();
const app = createApp(() => ({ ...runtime, db }));

// Queries of every kind: the most common words (matching most messages), mid-frequency and
// rare words, two- and three-word searches, and strings full of FTS5 syntax.
const pick = (from: number, to: number) => vocabulary[from + Math.floor(random() * (to - from))]!;
const kinds: Array<[string, () => string]> = [
  ["common word", () => pick(0, 20)],
  ["mid-frequency word", () => pick(20, 1_000)],
  ["rare word", () => pick(1_000, 20_000)],
  ["two words", () => `${pick(0, 200)} ${pick(20, 2_000)}`],
  ["three words", () => `${pick(0, 50)} ${pick(20, 500)} ${pick(20, 500)}`],
  ["FTS5 syntax as text", () => `"${pick(20, 500)}" OR NEAR(${pick(0, 50)} ${pick(20, 500)}) AND ${pick(20, 200)}*`],
];
const queries = Array.from({ length: QUERIES }, (_, i) => {
  const [kind, make] = kinds[i % kinds.length]!;
  return { kind, q: make() };
});

const headers = { Authorization: `Bearer ${token}` };
async function viaApp(q: string) {
  const res = await app.request(`/contexts/search?q=${encodeURIComponent(q)}&limit=20`, { headers });
  if (res.status !== 200) throw new Error(`search failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { items: unknown[] }).items.length;
}
// The floor: the same MATCH and rank window on the bare client, rowids only (no HTTP, no
// auth, no join to names, no snippets).
async function bareMatch(q: string) {
  const rs = await client.execute({
    sql: `select rowid from search_fts where search_fts match :m
          and rowid >= coalesce((select rowid from search_fts where search_fts match :m order by rowid desc limit 1 offset ${RANK_WINDOW - 1}), 0)
          order by bm25(search_fts, 0.0, 1.0) limit 20`,
    args: { m: matchExpression(userId, searchTerms(q)) },
  });
  return rs.rows.length;
}
// What the window avoids: BM25 over every match.
async function unbounded(q: string) {
  const rs = await client.execute({
    sql: "select rowid from search_fts where search_fts match ? order by bm25(search_fts, 0.0, 1.0) limit 20",
    args: [matchExpression(userId, searchTerms(q))],
  });
  return rs.rows.length;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
async function time(label: string, run: (q: string) => Promise<number>) {
  for (const { q } of queries.slice(0, 30)) await run(q); // warm the page cache and the JWT cache
  const all: number[] = [];
  const byKind = new Map<string, number[]>();
  let hits = 0;
  for (const { kind, q } of queries) {
    const t = performance.now();
    hits += await run(q);
    const ms = performance.now() - t;
    all.push(ms);
    byKind.set(kind, [...(byKind.get(kind) ?? []), ms]);
  }
  all.sort((a, b) => a - b);
  for (const list of byKind.values()) list.sort((a, b) => a - b);
  return { label, p50: percentile(all, 50), p95: percentile(all, 95), p99: percentile(all, 99), max: all[all.length - 1]!, hits, byKind };
}

const floor = await time(`floor: the same FTS5 MATCH and ${RANK_WINDOW}-match window on the client, rowids only`, bareMatch);
const appResult = await time("app: GET /contexts/search?q=…&limit=20 with a JWT (ES256)", viaApp);
const reference = await time("reference: BM25 over every match, no window (not used)", unbounded);

const f = (ms: number) => ms.toFixed(2);
const rows = [floor, appResult, reference]
  .map((r) => `| ${r.label} | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} | ${f(r.max)} | ${(r.hits / QUERIES).toFixed(1)} |`)
  .join("\n");
const kindRows = kinds
  .map(([kind]) => {
    const a = appResult.byKind.get(kind)!;
    const b = floor.byKind.get(kind)!;
    const r = reference.byKind.get(kind)!;
    return `| ${kind} | ${f(percentile(b, 50))} | ${f(percentile(a, 50))} | ${f(percentile(a, 99))} | ${f(percentile(r, 50))} |`;
  })
  .join("\n");
const target = appResult.p99 < 50;
const body = `${machine()}; ${MESSAGES.toLocaleString("en")} messages of the searching user in ${Math.ceil(MESSAGES / PER_CONTEXT)} contexts, plus ${OTHER_MESSAGES.toLocaleString("en")} of 5 other users (seeded in ${seedSeconds.toFixed(0)} s through the migrations' triggers, then indexed in ${indexSeconds.toFixed(0)} s in batches of ${INDEX_BATCH.toLocaleString("en")}, as the server's background job does); ${QUERIES} sequential queries, in-process requests, times in ms.

| run | p50 | p95 | p99 | max | hits/query |
|---|---:|---:|---:|---:|---:|
${rows}

| query kind | floor p50 | app p50 | app p99 | no window p50 |
|---|---:|---:|---:|---:|
${kindRows}

- App p99: **${f(appResult.p99)} ms** (target well under 50 ms): ${target ? "met" : "NOT met"}.
- App p50 over floor p50: **+${f(appResult.p50 - floor.p50)} ms** (JWT check, routing, validation, join, snippets, JSON).
- Ranking is BM25 over the newest ${RANK_WINDOW.toLocaleString("en")} matches (docs/contexts.md); the last row shows what ranking every match of a common word would cost.`;
console.log(`\n## Search\n\n${body}\n`);
writeSection("Search", body);

client.close();
rmSync(dir, { recursive: true, force: true });
