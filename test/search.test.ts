import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addContext, addMessages, countRows, seedUser } from "./support/context-fixtures";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { sql } from "drizzle-orm";
import { keepSearchIndexed } from "../src/jobs/search-index";
import { indexPendingSearch, ownerKey, RANK_WINDOW } from "../src/features/contexts/search";

interface Hit {
  contextId: string;
  contextName: string;
  messageId: string | null;
  snippet: string;
  createdAt: string;
}

let h: Harness;
let alice: string;
let aliceId: string;
let bob: string;
let bobId: string;
const t0 = new Date("2026-11-20T08:00:00.000Z");

beforeAll(async () => {
  h = await createHarness();
  alice = await h.signIn("alice");
  bob = await h.signIn("bob");
  aliceId = await seedUser(h.db, h.idp.issuer, "alice");
  bobId = await seedUser(h.db, h.idp.issuer, "bob");
});
afterAll(() => h.close());

async function search(token: string, q: string, limit?: number): Promise<Hit[]> {
  const res = await h.request(`/contexts/search?q=${encodeURIComponent(q)}${limit ? `&limit=${limit}` : ""}`, { token });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: Hit[] }).items;
}

/** A user of their own with one context holding `texts`, for tests that need a clean slate. */
async function userWith(name: string, contextName: string, texts: string[]) {
  const token = await h.signIn(name);
  const userId = await seedUser(h.db, h.idp.issuer, name);
  const contextId = await addContext(h.db, userId, { name: contextName, at: t0 });
  const ids = await addMessages(h.db, userId, contextId, texts.map((content) => ({ content })), t0);
  return { token, userId, contextId, ids };
}

describe("GET /contexts/search", () => {
  it("finds messages that chat-style inserts put in the database, with a marked snippet", async () => {
    const contextId = await addContext(h.db, aliceId, { name: "Balcony garden", at: t0 });
    const [question] = await addMessages(h.db, aliceId, contextId, [{ content: "Should my tomatoes get afternoon shade in July?" }], t0);
    expect(await search(alice, "tomatoes shade")).toEqual([
      {
        contextId,
        contextName: "Balcony garden",
        messageId: question,
        snippet: "Should my **tomatoes** get afternoon **shade** in July?",
        createdAt: t0.toISOString(),
      },
    ]);
  });

  it("finds a context by its name, with messageId null", async () => {
    const contextId = await addContext(h.db, aliceId, { name: "Quince pruning", at: t0 });
    expect(await search(alice, "quince")).toEqual([
      { contextId, contextName: "Quince pruning", messageId: null, snippet: "**Quince** pruning", createdAt: t0.toISOString() },
    ]);
  });

  it("shortens the snippet around the hit in a long message", async () => {
    const long = `${"filler ".repeat(200)}the marigold stands here ${"padding ".repeat(200)}`;
    const { token } = await userWith("long-text", "Long", [long]);
    const [hit] = await search(token, "marigold");
    expect(hit!.snippet).toContain("**marigold**");
    expect(hit!.snippet.length).toBeLessThan(200);
    expect(hit!.snippet).toMatch(/^….*…$/);
  });

  it("requires every word, in any order and any case, and matches word stems", async () => {
    const { token, ids } = await userWith("stems", "Plants", [
      "Watering the orchid weekly",
      "The orchid sits by the window",
      "Cactus needs little water",
    ]);
    expect((await search(token, "ORCHID watered")).map((x) => x.messageId)).toEqual([ids[0]]);
    expect((await search(token, "water")).map((x) => x.messageId).sort()).toEqual([ids[0], ids[2]].sort());
  });

  it("ranks the best match first", async () => {
    const { token, ids } = await userWith("ranker", "Ranking", [
      "A long message that mentions a begonia once among many other words about soil, pots, light, water and the weather this week",
      "begonia begonia begonia",
      "begonia care",
    ]);
    const hits = await search(token, "begonia");
    expect(hits.map((x) => x.messageId)).toEqual([ids[1], ids[2], ids[0]]);
  });

  it(`ranks the newest ${RANK_WINDOW} matches when more messages match, best first among them`, async () => {
    const texts = Array.from({ length: RANK_WINDOW + 5 }, (_, i) => `hosta note ${i} with several other words to make it longer`);
    texts[0] = "hosta hosta hosta"; // the best match of all, but the oldest: outside the window
    texts[500] = "hosta hosta"; // the best inside the window
    const { token, ids } = await userWith("windowed", "Window", texts);
    const hits = await search(token, "hosta", 3);
    expect(hits[0]!.messageId).toBe(ids[500]);
    expect(hits.map((x) => x.messageId)).not.toContain(ids[0]);
    expect(hits).toHaveLength(3);
  });

  it("returns at most limit hits", async () => {
    const { token } = await userWith("limiter", "Many", Array.from({ length: 8 }, (_, i) => `fern number ${i}`));
    expect(await search(token, "fern", 3)).toHaveLength(3);
    expect(await search(token, "fern")).toHaveLength(8);
  });

  it("indexes a rename and forgets the old name", async () => {
    const res = await h.request("/contexts", { method: "POST", token: alice, json: { name: "Wisteria" } });
    const { id } = (await res.json()) as { id: string };
    await h.request(`/contexts/${id}`, { method: "PATCH", token: alice, json: { name: "Clematis" } });
    expect(await search(alice, "wisteria")).toEqual([]);
    expect((await search(alice, "clematis")).map((x) => x.contextId)).toEqual([id]);
  });

  it("leaves no stale hits after a context is deleted", async () => {
    const res = await h.request("/contexts", { method: "POST", token: alice, json: { name: "Ephemeral yucca" } });
    const { id } = (await res.json()) as { id: string };
    await addMessages(h.db, aliceId, id, [{ content: "yucca roots rot" }], t0);
    expect(await search(alice, "yucca")).toHaveLength(2);
    expect((await h.request(`/contexts/${id}`, { method: "DELETE", token: alice })).status).toBe(204);
    expect(await search(alice, "yucca")).toEqual([]);
    expect(await countRows(h.db, "search_docs", id)).toBe(0);
  });

  it("never shows another user's messages or context names", async () => {
    const bobsContext = await addContext(h.db, bobId, { name: "Bob's mandevilla", at: t0 });
    await addMessages(h.db, bobId, bobsContext, [{ content: "mandevilla secrets of bob" }], t0);
    expect(await search(alice, "mandevilla")).toEqual([]);
    expect((await search(bob, "mandevilla")).map((x) => x.contextId)).toEqual([bobsContext, bobsContext]);
  });

  it("does not match the user id the index keeps beside the text", async () => {
    const { token, userId } = await userWith("idless", "Ids", ["nothing to see"]);
    const idWords = [...userId.split(/[_-]/).filter(Boolean), ownerKey(userId)];
    for (const word of idWords) expect(await search(token, word)).toEqual([]);
  });

  describe("with hostile query strings", () => {
    const texts = [
      'She said "NEAR(rose thorn)" AND meant it',
      "Use OR instead; NOT always; a*b (parenthesis) body:colon ^caret",
      "plain lavender notes",
    ];
    let token: string;
    let ids: string[];
    beforeAll(async () => {
      ({ token, ids } = await userWith("hostile", "Hostile", texts));
    });

    it.each([
      ['"NEAR(rose thorn)"', 0],
      ["NEAR(rose", 0],
      ['"rose', 0],
      ['rose"', 0],
      ['"rose" AND "thorn"', 0],
      ["OR instead", 1],
      ["NOT always", 1],
      ["a*b", 1],
      ["(parenthesis)", 1],
      ["body:colon", 1],
      ["^caret", 1],
      ["OR", 1],
    ])("searches %s as text and finds the message that holds it", async (q, index) => {
      expect((await search(token, q)).map((x) => x.messageId)).toEqual([ids[index as number]]);
    });

    it.each([
      ["lavender OR thorn", false],
      ["lavender NOT notes", false],
      ["lavender -notes", true],
      ["lav*", false],
      ["user_id:lavender", false],
      ["{body}: thorn", false],
      ["NEAR(lavender notes, 0)", false],
      ["'; DROP TABLE messages; --", false],
      ["\u0000lavender", true],
      ["lavender\u202e", true],
      ["🌸 lavender", true],
    ])("answers %j with 200, operators taken as words (finds lavender: %s)", async (q, found) => {
      expect((await search(token, q)).map((x) => x.messageId)).toEqual(found ? [ids[2]] : []);
    });

    it.each([
      ["", /q/],
      ["   ", /q: must contain at least one word/],
      ["*", /q: must contain at least one word/],
      ['" ( ) *', /q: must contain at least one word/],
      ['""""', /q: must contain at least one word/],
      ["x".repeat(201), /q: must be at most 200 characters/],
      [Array.from({ length: 17 }, (_, i) => `w${i}`).join(" "), /q: must hold at most 16 words/],
    ])("answers 400 for %j", async (q, pattern) => {
      await expectError(await h.request(`/contexts/search?q=${encodeURIComponent(q)}`, { token }), 400, pattern);
    });

    it("answers 400 without q, and for a bad limit", async () => {
      await expectError(await h.request("/contexts/search", { token }), 400, /q/);
      await expectError(await h.request("/contexts/search?q=lavender&limit=51", { token }), 400, /limit/);
      await expectError(await h.request("/contexts/search?q=lavender&limit=0", { token }), 400, /limit/);
    });

    it("still answers normal searches afterwards", async () => {
      expect((await search(token, "lavender")).map((x) => x.messageId)).toEqual([ids[2]]);
    });
  });

  it("leaves archived contexts out unless includeArchived=true", async () => {
    const { token, contextId, ids } = await userWith("archivist", "Old notes", ["quokka sightings on the island"]);
    expect((await search(token, "quokka")).map((h) => h.messageId)).toEqual([ids[0]]);
    expect((await h.request(`/contexts/${contextId}`, { method: "PATCH", token, json: { archived: true } })).status).toBe(200);
    expect(await search(token, "quokka")).toEqual([]);
    expect(await search(token, "notes")).toEqual([]);
    const res = await h.request("/contexts/search?q=quokka&includeArchived=true", { token });
    expect(((await res.json()) as { items: Hit[] }).items.map((h) => h.messageId)).toEqual([ids[0]]);
  });

  it("answers 401 without credentials", async () => {
    await expectError(await h.request("/contexts/search?q=x"), 401);
  });
});

describe("indexing off the chat path", () => {
  const waiting = async (userId?: string) => {
    const [row] = await h.db.all<{ n: number }>(
      userId === undefined
        ? sql`select count(*) as n from search_pending`
        : sql`select count(*) as n from search_pending p join search_docs d on d.id = p.id where d.user_id = ${userId}`,
    );
    return row!.n;
  };
  /**
   * With every waiting entry indexed, FTS5 checks its index against search_docs row by
   * row, and throws on a mismatch (an entry told to the index twice, or deleted from it
   * without having been given to it, shows here).
   */
  const indexMatchesContent = async () => {
    while ((await indexPendingSearch(h.db)) > 0);
    await h.db.run(sql`insert into search_fts (search_fts, rank) values ('integrity-check', 1)`);
  };
  /**
   * Entries the index holds that it should not (waiting ones, or gone) and entries it
   * lacks (neither waiting nor indexed): both empty at every step. FTS5 keeps one
   * search_fts_docsize row per entry it was given.
   */
  const indexDrift = async () => ({
    extra: await h.db.all(sql`select id from search_fts_docsize where id in (select id from search_pending) or id not in (select id from search_docs)`),
    missing: await h.db.all(sql`select id from search_docs where id not in (select id from search_pending) and id not in (select id from search_fts_docsize)`),
  });

  it("stores new entries as waiting; a search indexes its owner's first, and only theirs", async () => {
    const carol = await userWith("carol-waits", "Cactus corner", ["cactus needs sun"]);
    const dave = await userWith("dave-waits", "Cactus too", ["cactus in winter"]);
    expect(await waiting(carol.userId)).toBe(2); // the context's name and the message
    expect(await waiting(dave.userId)).toBe(2);
    expect((await search(carol.token, "cactus")).map((x) => x.messageId).sort()).toEqual([carol.ids[0], null].sort());
    expect(await waiting(carol.userId)).toBe(0);
    expect(await waiting(dave.userId)).toBe(2);
    await indexMatchesContent();
  });

  it("keeps the index exact through renames and deletes of waiting and indexed entries", async () => {
    const erin = await userWith("erin-edits", "Orchid shelf", ["orchid roots show"]);
    const indexedId = erin.contextId;
    await search(erin.token, "orchid"); // indexed now
    const created = async (name: string) => ((await (await h.request("/contexts", { method: "POST", token: erin.token, json: { name } })).json()) as { id: string }).id;
    const waitingId = await created("Orchid window");
    const doomedWaiting = await created("Orchid bin");
    const rename = (id: string, name: string) => h.request(`/contexts/${id}`, { method: "PATCH", token: erin.token, json: { name } });
    expect((await rename(indexedId, "Begonia shelf")).status).toBe(200);
    expect(await indexDrift()).toEqual({ extra: [], missing: [] });
    expect((await rename(waitingId, "Begonia window")).status).toBe(200);
    expect(await indexDrift()).toEqual({ extra: [], missing: [] }); // still waiting: the index was not told
    expect((await h.request(`/contexts/${doomedWaiting}`, { method: "DELETE", token: erin.token })).status).toBe(204);
    expect(await indexDrift()).toEqual({ extra: [], missing: [] });
    expect(await waiting(erin.userId)).toBe(1); // the renamed window; the bin went with its context
    await indexMatchesContent();
    expect(await indexDrift()).toEqual({ extra: [], missing: [] });
    expect((await search(erin.token, "begonia")).map((x) => x.contextId).sort()).toEqual([indexedId, waitingId].sort());
    expect((await search(erin.token, "orchid")).map((x) => x.messageId)).toEqual([erin.ids[0]]);
    // Deleting an indexed context removes its entries from the index too.
    expect((await h.request(`/contexts/${indexedId}`, { method: "DELETE", token: erin.token })).status).toBe(204);
    await indexMatchesContent();
    expect((await search(erin.token, "orchid")).map((x) => x.messageId)).toEqual([]);
  });

  it("indexes everyone's waiting entries in the background", async () => {
    await userWith("frank-waits", "Fern room", ["fern fronds"]);
    expect(await waiting()).toBeGreaterThan(0);
    const stop = keepSearchIndexed({ db: h.db, log: h.deps.log }, 10);
    try {
      await expect.poll(waiting, { timeout: 5000 }).toBe(0);
    } finally {
      stop();
    }
    await indexMatchesContent();
  });
});

