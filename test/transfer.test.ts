import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addMessages, seedUser } from "./support/context-fixtures";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

interface Context {
  id: string;
  name: string;
  nameSource: string;
  groupId: string | null;
  messageCount: number;
  leafId: string | null;
  instructions: string | null;
  pinned: boolean;
  archived: boolean;
  createdAt: string;
  updatedAt: string;
}
interface Message {
  id: string;
  parentId: string | null;
  role: string;
  content: string;
  model?: string;
  siblingIds?: string[];
  createdAt: string;
}
interface ExportDoc {
  format: string;
  version: number;
  exportedAt: string;
  profile?: { name: string; presets: unknown[] };
  groups: Array<{ id: string; name: string; createdAt: string }>;
  contexts: Array<Omit<Context, "messageCount"> & { messages: Message[] }>;
  shares?: Array<{ token: string; url: string; contextId: string }>;
  apiKeys?: Array<Record<string, unknown>>;
  usage?: { days: Array<{ day: string; used: number }>; messages: unknown[] };
}

const chatGptFile = readFileSync(resolve(import.meta.dirname, "fixtures/chatgpt-conversations.json"), "utf8");

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 9, minute));

async function ok<T>(res: Response, status = 200): Promise<T> {
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as T;
}
const get = <T>(path: string, token: string) => h.request(path, { token }).then((r) => ok<T>(r));
const importFile = (token: string, body: string, headers: Record<string, string> = { "Content-Type": "application/json" }) =>
  h.request("/contexts/import", { method: "POST", token, headers, body });
const countContexts = async (token: string) =>
  (await get<{ items: unknown[] }>("/contexts?limit=100", token)).items.length +
  (await get<{ items: unknown[] }>("/contexts?limit=100&archived=true", token)).items.length;

/**
 * A person with a bit of everything: a group, a context in it with instructions and two
 * branches (pinned), an archived one, a share link, an API key and a preset.
 */
async function personWithData(name: string) {
  const token = await h.signIn(name);
  const userId = await seedUser(h.db, h.idp.issuer, name);
  const group = await ok<{ id: string }>(await h.request("/groups", { method: "POST", token, json: { name: "Houseplants" } }), 201);
  const main = await ok<Context>(
    await h.request("/contexts", { method: "POST", token, json: { name: "Monstera", groupId: group.id, instructions: "Answer in metric units." } }),
    201,
  );
  const [q1, a1, q2, a2] = await addMessages(
    h.db,
    userId,
    main.id,
    [{ content: "How often?" }, { content: "Weekly.", role: "assistant", model: "svc-70b" }, { content: "In winter?" }, { content: "Every 2 weeks.", role: "assistant", model: "svc-70b" }],
    at(0),
  );
  const [a1b] = await addMessages(h.db, userId, main.id, [{ content: "Once a week, when dry.", role: "assistant", model: "svc-70b" }], at(5), { parentId: q1! });
  await h.request(`/contexts/${main.id}`, { method: "PATCH", token, json: { leafId: a2, pinned: true } });
  const old = await ok<Context>(await h.request("/contexts", { method: "POST", token, json: { name: "Old cactus notes" } }), 201);
  await addMessages(h.db, userId, old.id, [{ content: "Cactus in winter?" }, { content: "Barely water it.", role: "assistant" }], at(10));
  await h.request(`/contexts/${old.id}`, { method: "PATCH", token, json: { archived: true } });
  await h.request(`/contexts/${main.id}/share`, { method: "POST", token });
  await h.request("/keys", { method: "POST", token, json: { name: "laptop" } });
  await h.request("/me", { method: "PATCH", token, json: { presets: [{ name: "Coach", instructions: "Be patient." }] } });
  return { token, userId, group, main, old, ids: { q1: q1!, a1: a1!, q2: q2!, a2: a2!, a1b: a1b! } };
}

describe("GET /contexts/{id}/export", () => {
  it("answers the context with every branch as a JSON attachment that names it", async () => {
    const p = await personWithData("exporter");
    const res = await h.request(`/contexts/${p.main.id}/export`, { token: p.token });
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="Monstera.json"');
    const doc = await ok<ExportDoc>(res);
    expect(doc).toMatchObject({ format: "plant-chat-export", version: 1, groups: [{ id: p.group.id, name: "Houseplants" }] });
    expect(doc.profile).toBeUndefined();
    expect(doc.contexts).toHaveLength(1);
    const [context] = doc.contexts;
    expect(context).toMatchObject({ id: p.main.id, name: "Monstera", groupId: p.group.id, instructions: "Answer in metric units.", pinned: true, leafId: p.ids.a2 });
    expect(context!.messages.map((m) => [m.id, m.parentId, m.content])).toEqual([
      [p.ids.q1, null, "How often?"],
      [p.ids.a1, p.ids.q1, "Weekly."],
      [p.ids.q2, p.ids.a1, "In winter?"],
      [p.ids.a2, p.ids.q2, "Every 2 weeks."],
      [p.ids.a1b, p.ids.q1, "Once a week, when dry."],
    ]);
  });

  it("answers the active branch as Markdown, with the instructions, for reading", async () => {
    const p = await personWithData("markdown");
    const res = await h.request(`/contexts/${p.main.id}/export?format=markdown`, { token: p.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="Monstera.md"');
    expect(await res.text()).toBe(
      `${[
        "# Monstera",
        "> **Instructions**\n>\n> Answer in metric units.",
        "## You, 2026-11-20 09:00 UTC\n\nHow often?",
        "## Assistant (svc-70b), 2026-11-20 09:00 UTC\n\nWeekly.",
        "## You, 2026-11-20 09:00 UTC\n\nIn winter?",
        "## Assistant (svc-70b), 2026-11-20 09:00 UTC\n\nEvery 2 weeks.",
      ].join("\n\n")}\n`,
    );
  });

  it("answers 404 for another person's context and 400 for an unknown format", async () => {
    const p = await personWithData("owner-of-export");
    const other = await h.signIn("not-the-owner");
    await expectError(await h.request(`/contexts/${p.main.id}/export`, { token: other }), 404, undefined, "context_not_found");
    await expectError(await h.request(`/contexts/${p.main.id}/export?format=markdown`, { token: other }), 404, undefined, "context_not_found");
    await expectError(await h.request(`/contexts/${p.main.id}/export?format=pdf`, { token: p.token }), 400, /format: must be json or markdown/);
  });
});

describe("GET /me/export", () => {
  it("answers everything the person owns, and nothing of anyone else's or any secret", async () => {
    const p = await personWithData("everything");
    await personWithData("someone-else");
    const res = await h.request("/me/export", { token: p.token });
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="assistant-chat-export-\d{4}-\d\d-\d\d\.json"$/);
    const doc = await ok<ExportDoc>(res);
    expect(doc.profile).toMatchObject({ name: "everything", presets: [{ name: "Coach", instructions: "Be patient." }] });
    expect(doc.groups.map((g) => g.name)).toEqual(["Houseplants"]);
    expect(doc.contexts.map((c) => [c.name, c.archived, c.messages.length])).toEqual([
      ["Old cactus notes", true, 2],
      ["Monstera", false, 5],
    ]);
    expect(doc.shares).toEqual([expect.objectContaining({ contextId: p.main.id, url: expect.stringMatching(/\/s\/shr_/) })]);
    expect(doc.apiKeys).toEqual([{ id: expect.any(String), name: "laptop", prefix: expect.any(String), createdAt: expect.any(String), lastUsedAt: null }]);
    expect(doc.usage).toEqual({ days: [], messages: [] });
    const text = JSON.stringify(doc);
    expect(text).not.toContain("someone-else");
    expect(text).not.toMatch(/sk_[A-Za-z0-9_-]{20,}/);
  });
});

describe("POST /contexts/import", () => {
  it("takes back an export: the same contexts and branches, with new ids, and charges nothing", async () => {
    const p = await personWithData("round-tripper");
    const exported = await get<ExportDoc>("/me/export", p.token);
    const carol = await h.signIn("carol-imports");
    h.clock.set("2026-11-23T10:00:00.000Z");
    const imported = await ok<{ items: Context[] }>(await importFile(carol, JSON.stringify(exported)), 201);
    expect(imported.items.map((c) => c.name)).toEqual(["Old cactus notes", "Monstera"]);
    // The imported ones lead the list, in the order they were last updated in the file.
    expect(imported.items.map((c) => c.updatedAt)).toEqual(["2026-11-23T10:00:00.000Z", "2026-11-23T09:59:59.999Z"]);
    expect((await get<{ items: Context[] }>("/contexts?archived=true", carol)).items.map((c) => c.name)).toEqual(["Old cactus notes"]);

    const again = await get<ExportDoc>("/me/export", carol);
    const shape = (doc: ExportDoc) =>
      doc.contexts
        .map((c) => {
          const index = new Map(c.messages.map((m, i) => [m.id, i]));
          const group = doc.groups.find((g) => g.id === c.groupId)?.name ?? null;
          return {
            name: c.name,
            nameSource: c.nameSource,
            group,
            instructions: c.instructions,
            pinned: c.pinned,
            archived: c.archived,
            createdAt: c.createdAt,
            leaf: c.leafId === null ? null : index.get(c.leafId),
            messages: c.messages.map((m) => ({ ...m, id: index.get(m.id), parentId: m.parentId === null ? null : index.get(m.parentId) })),
          };
        })
        .sort((a, b) => a.name.localeCompare(b.name));
    expect(shape(again)).toEqual(shape(exported));
    const oldIds = new Set(exported.contexts.flatMap((c) => [c.id, ...c.messages.map((m) => m.id)]));
    expect(again.contexts.flatMap((c) => [c.id, ...c.messages.map((m) => m.id)]).some((id) => oldIds.has(id))).toBe(false);
    expect(((await get<{ used: number }>("/credits", carol)).used)).toBe(0);
    // The branches read as they did.
    const monstera = imported.items.find((c) => c.name === "Monstera")!;
    const read = await get<{ messages: Message[] }>(`/contexts/${monstera.id}`, carol);
    expect(read.messages.map((m) => m.content)).toEqual(["How often?", "Weekly.", "In winter?", "Every 2 weeks."]);
    expect(read.messages[1]!.siblingIds).toHaveLength(2);
  });

  it("skips what is already here: the same file imported twice, an account's own export, ChatGPT's file again", async () => {
    const p = await personWithData("re-importer");
    const exported = JSON.stringify(await get<ExportDoc>("/me/export", p.token));
    // Its own export, back into the same account: both conversations are there.
    expect(await ok<{ items: Context[]; skipped: number }>(await importFile(p.token, exported), 201)).toEqual({ items: [], skipped: 2 });
    const dana = await h.signIn("dana-imports-twice");
    const first = await ok<{ items: Context[]; skipped: number }>(await importFile(dana, exported), 201);
    expect([first.items.length, first.skipped]).toEqual([2, 0]);
    expect(await ok<{ items: Context[]; skipped: number }>(await importFile(dana, exported), 201)).toEqual({ items: [], skipped: 2 });
    expect(await countContexts(dana)).toBe(2);
    // Deleted since: imported again.
    await h.request(`/contexts/${first.items[0]!.id}`, { method: "DELETE", token: dana });
    const back = await ok<{ items: Context[]; skipped: number }>(await importFile(dana, exported), 201);
    expect([back.items.map((c) => c.name), back.skipped]).toEqual([[first.items[0]!.name], 1]);

    const eli = await h.signIn("eli-from-chatgpt-twice");
    expect((await ok<{ items: Context[]; skipped: number }>(await importFile(eli, chatGptFile), 201)).skipped).toBe(0);
    expect(await ok<{ items: Context[]; skipped: number }>(await importFile(eli, chatGptFile), 201)).toEqual({ items: [], skipped: 3 });
    expect(await countContexts(eli)).toBe(3);
  });

  it("puts imported contexts into the person's group of the same name, creating it when missing", async () => {
    const p = await personWithData("grouper");
    const doc = await get<ExportDoc>(`/contexts/${p.main.id}/export`, p.token);
    const into = await h.signIn("has-the-group");
    const existing = await ok<{ id: string }>(await h.request("/groups", { method: "POST", token: into, json: { name: "Houseplants" } }), 201);
    const [first] = (await ok<{ items: Context[] }>(await importFile(into, JSON.stringify(doc)), 201)).items;
    expect(first!.groupId).toBe(existing.id);
    const fresh = await h.signIn("has-no-group");
    const [second] = (await ok<{ items: Context[] }>(await importFile(fresh, JSON.stringify(doc)), 201)).items;
    expect((await get<{ items: Array<{ id: string; name: string }> }>("/groups", fresh)).items).toEqual([
      expect.objectContaining({ id: second!.groupId, name: "Houseplants" }),
    ]);
  });

  it("imports ChatGPT's conversations.json: what a person saw, every branch, the branch they were on", async () => {
    const token = await h.signIn("from-chatgpt");
    const { items } = await ok<{ items: Context[] }>(await importFile(token, chatGptFile), 201);
    expect(items.map((c) => [c.name, c.archived, c.messageCount])).toEqual([
      ["Monstera watering schedule", false, 7],
      ["Identify this plant", true, 4],
      ["Plan a small herb garden for a sunny balcony", false, 2],
    ]);
    const [monstera, plant, herbs] = items;
    expect(monstera!.instructions).toContain("```Answer in metric units.```");
    expect(monstera!.instructions).toContain("I keep houseplants in a flat in Lisbon.");

    // current_node is on the edited question's branch.
    const branch = await get<{ messages: Message[] }>(`/contexts/${monstera!.id}`, token);
    expect(branch.messages.map((m) => [m.role, m.content, m.model])).toEqual([
      ["user", "How often should I water a monstera?", undefined],
      ["assistant", "About **once a week** in spring and summer: water when the top 5 cm of soil are dry.", "gpt-4o"],
      ["user", "And in winter, in a cold room at 15 °C?", undefined],
      ["assistant", "Every 3–4 weeks at 15 °C: the soil dries slowly, and wet cold roots rot.", "gpt-4o"],
    ]);
    expect(branch.messages[0]!.createdAt).toBe("2025-11-22T08:26:50.000Z");
    expect(branch.messages[1]!.siblingIds).toHaveLength(2); // the regenerated reply
    expect(branch.messages[2]!.siblingIds).toHaveLength(2); // the edited question
    const first = await get<{ messages: Message[] }>(`/contexts/${monstera!.id}?leaf=${branch.messages[2]!.siblingIds![0]}`, token);
    expect(first.messages.map((m) => m.content).slice(2)).toEqual(["And in winter?", "Less often: every 2–3 weeks, as growth slows down."]);

    // The image is marked, the code run is left out, its answer follows the question.
    const shown = await get<{ messages: Message[] }>(`/contexts/${plant!.id}`, token);
    expect(shown.messages.map((m) => m.content)).toEqual([
      "[image]\n\nWhat plant is this?",
      "It looks like a *Pilea peperomioides* (Chinese money plant): round, flat leaves on long stalks.",
      "What volume of soil does a pot 20 cm across and 18 cm deep hold?",
      "About **5.7 litres** (π × 10² × 18 cm³).",
    ]);
    expect(shown.messages.map((m) => m.parentId)).toEqual([null, shown.messages[0]!.id, shown.messages[1]!.id, shown.messages[2]!.id]);

    // No title: named after the first question; the reasoning is left out.
    const answered = await get<{ messages: Message[] }>(`/contexts/${herbs!.id}`, token);
    expect(answered.messages.map((m) => [m.role, m.model])).toEqual([["user", undefined], ["assistant", "o3-mini"]]);

    // Imported messages are searchable, and cost nothing.
    const hits = await get<{ items: Array<{ contextId: string }> }>("/contexts/search?q=pilea&includeArchived=true", token);
    expect(hits.items.map((hit) => hit.contextId)).toEqual([plant!.id]);
    expect((await get<{ used: number }>("/credits", token)).used).toBe(0);
  });

  it("takes one ChatGPT conversation on its own, and a file over the 1 MiB of other bodies", async () => {
    const token = await h.signIn("big-file");
    const [conversation] = JSON.parse(chatGptFile) as Array<{ mapping: Record<string, { message: { content: { parts?: string[] } } | null }> }>;
    const long = "Monsteras like bright, indirect light. ".repeat(2500); // ~100,000 characters
    for (const node of Object.values(conversation!.mapping)) {
      if (node.message?.content.parts?.[0]?.startsWith("Less often")) node.message.content.parts[0] = long.slice(0, 100_000);
    }
    const many = Array.from({ length: 12 }, () => conversation);
    const body = JSON.stringify(many);
    expect(body.length).toBeGreaterThan(1024 * 1024);
    const { items } = await ok<{ items: Context[] }>(await importFile(token, body), 201);
    expect(items).toHaveLength(12);
    // The same conversation on its own: already here.
    expect(await ok<{ items: Context[]; skipped: number }>(await importFile(token, JSON.stringify(conversation)), 201)).toMatchObject({ items: [], skipped: 1 });
  });

  const chatGpt = (mapping: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify([{ title: "t", mapping, ...extra }]);
  const node = (parent: string | null, role = "user", text = "hi") => ({
    parent,
    children: [],
    message: { author: { role }, content: { content_type: "text", parts: [text] }, create_time: 1 },
  });
  const exportWith = (contexts: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ format: "plant-chat-export", version: 1, groups: [], contexts, ...extra });
  const goodContext = { name: "fine", messages: [{ id: "a", parentId: null, role: "user", content: "hello", createdAt: "2026-01-01T00:00:00.000Z" }] };

  it.each([
    ["a file that is not JSON", "{not json", /the file is not valid JSON/],
    ["a file of neither format", JSON.stringify({ hello: 1 }), /neither an export of this service .* nor ChatGPT's conversations\.json/],
    ["a conversation that is not an object", JSON.stringify([5]), /\[0\]: must be a conversation/],
    ["a conversation without a mapping", JSON.stringify([{ title: "x" }]), /\[0\]\.mapping: must be an object of nodes/],
    ["a node whose parent is missing", chatGpt({ a: node(null), b: node("zzz") }), /\[0\]\.mapping\.b\.parent: names no node of this conversation \("zzz"\)/],
    ["nodes whose parents loop", chatGpt({ a: node("b"), b: node("a") }), /\[0\]\.mapping\.[ab]\.parent: its parents lead back to itself/],
    ["a current_node that is not a node", chatGpt({ a: node(null) }, { current_node: "q" }), /\[0\]\.current_node: names no node/],
    ["a message without content", chatGpt({ a: { parent: null, message: { author: { role: "user" } } } }), /\[0\]\.mapping\.a\.message\.content: must be an object/],
    ["parts that are not an array", chatGpt({ a: { parent: null, message: { author: { role: "user" }, content: { content_type: "text", parts: "x" } } } }), /content\.parts: must be an array/],
    ["a time that is not a number", chatGpt({ a: node(null) }, { create_time: "yesterday" }), /\[0\]\.create_time: must be a time in seconds/],
    ["a message over 100,000 characters", chatGpt({ a: node(null, "user", "x".repeat(100_001)) }), /\[0\]\.mapping\.a\.message\.content\.parts: is 100001 characters, more than the 100000/],
    ["an export of another version", exportWith([], { version: 2 }), /version: must be 1/],
    ["an export whose contexts are not an array", exportWith([]).replace('"contexts":[]', '"contexts":{}'), /contexts: must be an array/],
    ["a message whose parent is not in its context", exportWith([goodContext, { name: "bad", messages: [{ id: "a", parentId: "b", role: "user", content: "x" }] }]), /contexts\[1\]\.messages\[0\]\.parentId: names no message of this context/],
    ["two messages with one id", exportWith([{ name: "dup", messages: [goodContext.messages[0], goodContext.messages[0]] }]), /contexts\[0\]\.messages\[1\]\.id: "a" is the id of another message/],
    ["a role that is not user or assistant", exportWith([{ name: "r", messages: [{ id: "a", role: "system", content: "x" }] }]), /contexts\[0\]\.messages\[0\]\.role: must be "user" or "assistant"/],
    ["a leafId that is not a message", exportWith([{ ...goodContext, leafId: "nope" }]), /contexts\[0\]\.leafId: names no message of this context/],
    ["a groupId not among the groups", exportWith([{ ...goodContext, groupId: "grp_x" }]), /contexts\[0\]\.groupId: names no group/],
    ["a bad createdAt", exportWith([{ name: "t", messages: [{ ...goodContext.messages[0], createdAt: "soon" }] }]), /contexts\[0\]\.messages\[0\]\.createdAt: must be a time/],
    ["instructions over 8000 characters", exportWith([{ ...goodContext, instructions: "i".repeat(8001) }]), /contexts\[0\]\.instructions: must be at most 8000 characters/],
  ])("refuses %s with a 400 naming what is wrong, and imports nothing", async (_label, body, pattern) => {
    const token = await h.signIn("careful-importer");
    const before = await countContexts(token);
    await expectError(await importFile(token, body), 400, pattern, "import_invalid");
    expect(await countContexts(token)).toBe(before);
  });

  it("answers 415 for a file not sent as JSON and 413 for one over 10 MiB", async () => {
    const token = await h.signIn("wrong-upload");
    await expectError(await importFile(token, chatGptFile, { "Content-Type": "text/plain" }), 415, /JSON/);
    const huge = `[${" ".repeat(10 * 1024 * 1024)}]`;
    await expectError(await importFile(token, huge), 413, /over the 10 MiB an import may be/);
    await expectError(await h.request("/contexts/import", { method: "POST", headers: { "Content-Type": "application/json" }, body: "[]" }), 401);
  });
});
