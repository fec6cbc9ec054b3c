import { existsSync, readdirSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { sweepUnnamedFiles } from "../src/features/attachments/file-sweep";
import { runDailyRollover } from "../src/jobs/daily-rollover";
import { attachmentsFolder } from "../src/platform/node/node-deps";
import { expectError } from "./support/expect-error";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { fileForm, jpeg, pdf, png, svg } from "./support/files";
import { createHarness, type Harness } from "./support/harness";

let up: FakeUpstream;
let h: Harness;
let token: string;

beforeAll(async () => {
  up = await startFakeUpstream();
  const models = [
    { id: "vision", protocol: "openai", baseUrl: up.baseUrl, images: true, default: true, credits: 1 },
    { id: "plain", protocol: "openai", baseUrl: up.baseUrl, credits: 1 },
    { id: "claude", protocol: "anthropic", baseUrl: up.origin, apiKeyEnv: "CLAUDE_KEY", images: true, credits: 1 },
    { id: "narrow", protocol: "openai", baseUrl: up.baseUrl, credits: 1, contextWindow: 600 },
  ];
  h = await createHarness({
    env: { MODELS: JSON.stringify(models), CLAUDE_KEY: "claude-test-key", DAILY_CREDITS: "50", MAX_IMAGE_BYTES: "4096", MAX_DOCUMENT_BYTES: "16384", ATTACHMENT_QUOTA_BYTES: "30000" },
  });
  token = await h.signIn("uploader");
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.requests.length = 0;
});

const upload = (bytes: Uint8Array<ArrayBuffer>, name: string, as = token) => h.request("/attachments", { method: "POST", body: fileForm(bytes, name), token: as });
async function uploaded(bytes: Uint8Array<ArrayBuffer>, name: string, as = token): Promise<{ id: string; [k: string]: unknown }> {
  const res = await upload(bytes, name, as);
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}
const send = (json: Record<string, unknown>, as = token) => h.request("/chat/send", { method: "POST", json, token: as });
const credits = async (as = token) => ((await (await h.request("/credits", { token: as })).json()) as { remaining: number }).remaining;
const storedFiles = () => {
  const root = attachmentsFolder(`file:${h.dbFile}`);
  return existsSync(root) ? readdirSync(root).flatMap((d) => readdirSync(join(root, d)).filter((f) => !f.startsWith("."))) : [];
};

/** A file put in the store without a row (what a crash leaves), last written at `storedAt`; its path. */
async function storedOnly(text: string, storedAt: Date): Promise<string> {
  const bytes = new TextEncoder().encode(text);
  const hash = Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");
  await h.deps.blobs!.put(hash, bytes);
  const file = join(attachmentsFolder(`file:${h.dbFile}`), hash.slice(0, 2), hash);
  utimesSync(file, storedAt, storedAt);
  return file;
}
const rowHash = async (id: string) => (await h.db.all<{ sha256: string }>(sql`select sha256 from attachments where id = ${id}`))[0]!.sha256;

describe("POST /attachments", () => {
  it("takes a PNG, its type read from its bytes whatever the client says", async () => {
    const res = await h.request("/attachments", { method: "POST", body: fileForm(png(), "leaf.txt", "text/plain"), token });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: expect.stringMatching(/^att_[A-Za-z0-9_-]{22}$/), name: "leaf.txt", type: "image/png", kind: "image", size: png().length });
  });

  it("takes a JPEG, Markdown and a PDF, with the PDF's pages and text length", async () => {
    expect(await uploaded(jpeg(), "photo.jpg")).toMatchObject({ type: "image/jpeg", kind: "image" });
    expect(await uploaded(new TextEncoder().encode("# Care\n\nWater weekly."), "care.md")).toMatchObject({ type: "text/markdown", kind: "document", chars: 21 });
    expect(await uploaded(pdf(["Monstera care", "Light: bright, indirect"]), "care.pdf")).toMatchObject({ type: "application/pdf", kind: "document", pages: 2, chars: 37 });
  });

  it("refuses SVG and unknown binaries with 415 attachment_type", async () => {
    await expectError(await upload(svg(), "logo.svg"), 415, /SVG/, "attachment_type");
    await expectError(await upload(new Uint8Array([0x50, 0x4b, 0x03, 0x04, ...new Array(100).fill(1)]), "a.zip"), 415, /attach PNG, JPEG/, "attachment_type");
    await expectError(await upload(new Uint8Array([0, 1, 2, 3, 200, 201, 255]), "blob.bin"), 415, /neither an image nor UTF-8 text/, "attachment_type");
  });

  it("says a PDF without a text layer has none: 422 document_without_text", async () => {
    await expectError(await upload(pdf(["", ""]), "scan.pdf"), 422, /no text layer \(2 pages/, "document_without_text");
  });

  it("refuses an image over MAX_IMAGE_BYTES, and a body over the largest limit before reading it, with 413 attachment_too_large", async () => {
    await expectError(await upload(png(5000), "big.png"), 413, /over the 4 KB limit/, "attachment_too_large");
    const huge = new Uint8Array(200_000).fill(65);
    await expectError(await upload(huge, "huge.txt"), 413, /over the 16 KB limit/, "attachment_too_large");
  });

  it("refuses multipart without a file, and a body that is not multipart", async () => {
    await expectError(await h.request("/attachments", { method: "POST", json: { file: "x" }, token }), 415, /multipart\/form-data/);
    const empty = new FormData();
    empty.set("other", "x");
    await expectError(await h.request("/attachments", { method: "POST", body: empty, token }), 400);
  });

  it("keeps one file however often the same bytes are uploaded", async () => {
    const before = storedFiles().length;
    const bytes = new TextEncoder().encode("same bytes, twice");
    const a = await uploaded(bytes, "a.txt");
    const b = await uploaded(bytes, "b.txt");
    expect(a.id).not.toBe(b.id);
    expect(storedFiles().length).toBe(before + 1);
  });

  it("counts uploads against the person's quota: 413 attachment_quota past it", async () => {
    const other = await h.signIn("hoarder");
    const chunk = (n: number) => new TextEncoder().encode(`${n}`.repeat(14_000).slice(0, 14_000));
    await uploaded(chunk(1), "one.txt", other);
    await uploaded(chunk(2), "two.txt", other);
    await expectError(await upload(chunk(3), "three.txt", other), 413, /30 KB of storage/, "attachment_quota");
  });
});

describe("GET /attachments/{id}", () => {
  it("serves the owner the file with its sniffed type and headers that let nothing run", async () => {
    const { id } = await uploaded(png(), "leaf.png");
    const res = await h.request(`/attachments/${id}`, { token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("content-disposition")).toBe(`inline; filename="leaf.png"; filename*=UTF-8''leaf.png`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(png());
    const thumb = await h.request(`/attachments/${id}?thumbnail=1`, { token });
    expect(thumb.status).toBe(200);
    expect((await h.request(`/attachments/${id}?download=1`, { token })).headers.get("content-disposition")).toMatch(/^attachment;/);
  });

  it("answers anyone else 404", async () => {
    const { id } = await uploaded(png(), "mine.png");
    await expectError(await h.request(`/attachments/${id}`, { token: await h.signIn("stranger") }), 404, /does not exist/, "attachment_not_found");
    await expectError(await h.request(`/attachments/${id}`), 401);
  });
});

describe("sending attachments", () => {
  it("sends a PNG to a model that takes images as an image_url data part", async () => {
    const { id } = await uploaded(png(), "leaf.png");
    const res = await send({ message: "What plant is this?", model: "vision", attachments: [id] });
    expect(res.status).toBe(200);
    const content = up.requests.at(-1)!.body.messages.at(-1)!.content;
    expect(content).toEqual([
      { type: "text", text: "What plant is this?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png()).toString("base64")}` } },
    ]);
  });

  it("sends an Anthropic model an image block", async () => {
    const { id } = await uploaded(png(), "leaf.png");
    expect((await send({ message: "And now?", model: "claude", attachments: [id] })).status).toBe(200);
    const content = up.requests.at(-1)!.body.messages.at(-1)!.content;
    expect(content).toContainEqual({ type: "image", source: { type: "base64", media_type: "image/png", data: Buffer.from(png()).toString("base64") } });
  });

  it("refuses images to a model without images, 400 model_without_images, before anything is charged", async () => {
    const { id } = await uploaded(png(), "leaf.png");
    const before = await credits();
    const body = await expectError(await send({ message: "See?", model: "plain", attachments: [id] }), 400, /does not take images/, "model_without_images");
    expect(body.message).toMatch(/plain/);
    expect(await credits()).toBe(before);
    expect(up.requests).toHaveLength(0);
  });

  it("refuses an attachment that is not the sender's with 404, and more than 10 with 400", async () => {
    const { id } = await uploaded(png(), "leaf.png", await h.signIn("someone-else"));
    await expectError(await send({ message: "Look", attachments: [id] }), 404, /does not exist/, "attachment_not_found");
    await expectError(await send({ message: "Look", attachments: Array.from({ length: 11 }, (_, i) => `att_${i}`) }), 400, /at most 10 attachments/);
  });

  it("sends a PDF's text as a labelled block, and the history later includes it again", async () => {
    const { id } = await uploaded(pdf(["Repot the monstera in spring."]), "care.pdf");
    const first = await send({ message: "Summarise", model: "plain", attachments: [id] });
    expect(first.status).toBe(200);
    const reply = (await first.json()) as { contextId: string; attachmentsCut?: string[] };
    expect(reply.attachmentsCut).toBeUndefined();
    const text = (m: { content: unknown }) => (Array.isArray(m.content) ? m.content.map((p: { text: string }) => p.text).join("\n") : String(m.content));
    expect(text(up.requests.at(-1)!.body.messages.at(-1)!)).toBe('Summarise\n<document name="care.pdf" type="application/pdf" pages="1">\nRepot the monstera in spring.\n</document>');
    expect((await send({ message: "When again?", model: "plain", contextId: reply.contextId })).status).toBe(200);
    const history = up.requests.at(-1)!.body.messages;
    expect(text(history.at(-3)!)).toContain("Repot the monstera in spring.");
  });

  it("cuts a document that does not fit the window, says so to the model and in the reply", async () => {
    const long = Array.from({ length: 400 }, (_, i) => `line ${i} of the care guide`).join("\n");
    const { id } = await uploaded(new TextEncoder().encode(long), "guide.txt");
    const res = await send({ message: "Read it", model: "narrow", attachments: [id] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { attachmentsCut?: string[] }).attachmentsCut).toEqual([id]);
    const last = up.requests.at(-1)!.body.messages.at(-1)!.content as Array<{ text: string }>;
    expect(last[1]!.text).toMatch(/\[The document was cut here: the first \d+ of its \d+ characters fit the model's context window\.\]\n<\/document>$/);
  });
});

describe("reading attachments back with their messages", () => {
  it("lists a message's attachments in GET /contexts/{id} and in a share, whose viewers may read the files", async () => {
    const image = await uploaded(png(), "leaf.png");
    const doc = await uploaded(pdf(["Prune in March."]), "prune.pdf");
    const reply = (await (await send({ message: "These two", attachments: [image.id, doc.id] })).json()) as { contextId: string };
    const context = (await (await h.request(`/contexts/${reply.contextId}`, { token })).json()) as { messages: Array<{ role: string; attachments?: unknown[] }> };
    expect(context.messages[0]!.attachments).toEqual([
      { id: image.id, name: "leaf.png", type: "image/png", kind: "image", size: png().length },
      { id: doc.id, name: "prune.pdf", type: "application/pdf", kind: "document", size: expect.any(Number), pages: 1, chars: 15 },
    ]);
    expect(context.messages[1]!.attachments).toBeUndefined();

    const share = (await (await h.request(`/contexts/${reply.contextId}/share`, { method: "POST", json: {}, token })).json()) as { token: string };
    const shared = (await (await h.request(`/shared/${share.token}`)).json()) as { messages: Array<{ attachments?: Array<{ id: string }> }> };
    expect(shared.messages[0]!.attachments!.map((a) => a.id)).toEqual([image.id, doc.id]);
    const file = await h.request(`/shared/${share.token}/attachments/${image.id}`);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    const elsewhere = await uploaded(png(), "not-shared.png");
    await expectError(await h.request(`/shared/${share.token}/attachments/${elsewhere.id}`), 404, undefined, "attachment_not_found");
    await h.request(`/contexts/${reply.contextId}/share`, { method: "DELETE", token });
    await expectError(await h.request(`/shared/${share.token}/attachments/${image.id}`), 404);
  });

  it("keeps a message's attachments when its reply runs in the background (as the web client sends)", async () => {
    const image = await uploaded(png(), "fern.png");
    const reply = (await (await send({ message: "In the background", model: "vision", attachments: [image.id], background: true })).json()) as { contextId: string; status: string };
    expect(reply.status).toBe("done");
    const context = (await (await h.request(`/contexts/${reply.contextId}`, { token })).json()) as { messages: Array<{ attachments?: Array<{ id: string }> }> };
    expect(context.messages[0]!.attachments?.map((a) => a.id)).toEqual([image.id]);
  });

  it("sends a regenerated reply the answered message's attachments again", async () => {
    const { id } = await uploaded(png(), "again.png");
    const reply = (await (await send({ message: "Once more", model: "vision", attachments: [id] })).json()) as { contextId: string; messageId: string };
    up.requests.length = 0;
    const res = await h.request(`/contexts/${reply.contextId}/messages/${reply.messageId}/regenerate`, { method: "POST", json: { model: "vision" }, token });
    expect(res.status).toBe(200);
    expect(up.requests.at(-1)!.body.messages.at(-1)!.content).toContainEqual({ type: "image_url", image_url: { url: expect.stringMatching(/^data:image\/png;base64,/) } });
  });

  it("tells a model without images that an earlier message carried one", async () => {
    const { id } = await uploaded(png(), "earlier.png");
    const reply = (await (await send({ message: "Look", model: "vision", attachments: [id] })).json()) as { contextId: string };
    expect((await send({ message: "And in words?", model: "plain", contextId: reply.contextId })).status).toBe(200);
    const earlier = up.requests.at(-1)!.body.messages.at(-3)!.content as Array<{ type: string; text: string }>;
    expect(earlier[1]).toEqual({ type: "text", text: "[An image was attached here (earlier.png); this model does not take images.]" });
  });
});

describe("exports and imports", () => {
  it("carries the files in a context's JSON export (base64), and an import brings them back as the importer's", async () => {
    const { id } = await uploaded(png(), "exported.png");
    const reply = (await (await send({ message: "Export me", attachments: [id] })).json()) as { contextId: string };
    const exported = (await (await h.request(`/contexts/${reply.contextId}/export`, { token })).json()) as {
      contexts: Array<{ messages: Array<{ attachments?: Array<{ name: string; type: string; data: string }> }> }>;
    };
    expect(exported.contexts[0]!.messages[0]!.attachments).toEqual([
      { id, name: "exported.png", type: "image/png", kind: "image", size: png().length, data: Buffer.from(png()).toString("base64") },
    ]);
    const everything = (await (await h.request("/me/export", { token })).json()) as { contexts: Array<{ messages: Array<{ attachments?: unknown[] }> }> };
    expect(everything.contexts.some((c) => c.messages.some((m) => m.attachments?.length))).toBe(true);

    const importer = await h.signIn("importer");
    const res = await h.request("/contexts/import", { method: "POST", json: JSON.stringify(exported), token: importer });
    expect(res.status).toBe(201);
    const [created] = ((await res.json()) as { items: Array<{ id: string }> }).items;
    const context = (await (await h.request(`/contexts/${created!.id}`, { token: importer })).json()) as { messages: Array<{ attachments?: Array<{ id: string; name: string }> }> };
    const [copy] = context.messages[0]!.attachments!;
    expect(copy!.name).toBe("exported.png");
    expect(copy!.id).not.toBe(id);
    const file = await h.request(`/attachments/${copy!.id}`, { token: importer });
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(png());
  });

  it("refuses an import whose file is not an attachment the service takes", async () => {
    const document = { format: "plant-chat-export", version: 1, groups: [], contexts: [{ id: "c", name: "x", messages: [{ id: "m", parentId: null, role: "user", content: "hi", attachments: [{ name: "x.svg", data: Buffer.from(svg()).toString("base64") }] }] }] };
    await expectError(await h.request("/contexts/import", { method: "POST", json: JSON.stringify(document), token }), 415, /SVG/, "attachment_type");
  });
});

describe("deleting attachments", () => {
  it("deletes a context's attachments and their files with the context", async () => {
    const bytes = new TextEncoder().encode("unique bytes for deletion");
    const { id } = await uploaded(bytes, "gone.txt");
    const filesBefore = storedFiles().length;
    const reply = (await (await send({ message: "Keep this", attachments: [id] })).json()) as { contextId: string };
    expect((await h.request(`/contexts/${reply.contextId}`, { method: "DELETE", token })).status).toBe(204);
    await expectError(await h.request(`/attachments/${id}`, { token }), 404);
    expect(storedFiles().length).toBe(filesBefore - 1);
  });

  it("sweeps files that no row names in the daily job, once they are an hour old", async () => {
    const at = new Date(h.clock.now().getTime() + 86_400_000);
    // Files as a crash between a row's deletion and its file's would leave them: no row names them.
    const leftOld = await storedOnly(`left behind ${at.getTime()}`, new Date(at.getTime() - 2 * 3600_000));
    const leftJustNow = await storedOnly(`being uploaded ${at.getTime()}`, new Date(at.getTime() - 10 * 60_000));
    const named = await uploaded(new TextEncoder().encode(`still named ${at.getTime()}`), "named.txt");
    const namedFile = join(attachmentsFolder(`file:${h.dbFile}`), (await rowHash(named.id)).slice(0, 2), await rowHash(named.id));
    utimesSync(namedFile, new Date(at.getTime() - 2 * 3600_000), new Date(at.getTime() - 2 * 3600_000));

    const result = await runDailyRollover(h.deps, { scheduledTime: at });
    expect(result.removedUnnamedFiles).toBe(1);
    expect(result.examinedAttachmentFiles).toBe(storedFiles().length + 1);
    expect(existsSync(leftOld)).toBe(false);
    expect(existsSync(leftJustNow)).toBe(true); // its upload may not have written its row yet
    expect((await h.request(`/attachments/${named.id}`, { token })).status).toBe(200);
  });

  it("sweeps a bounded part of the store per run, resuming where the last run stopped", async () => {
    const at = new Date(h.clock.now().getTime() + 2 * 86_400_000);
    const left = await Promise.all([1, 2, 3].map((n) => storedOnly(`left behind, part ${n} of 3`, new Date(at.getTime() - 2 * 3600_000))));
    const total = storedFiles().length;
    const cursor = async () => (await h.db.all<{ position: string }>(sql`select position from job_cursors where name = 'attachment-files'`))[0]?.position;
    const first = await sweepUnnamedFiles(h.deps, at, 2);
    expect(first.examinedFiles).toBe(2);
    const stoppedAt = await cursor();
    expect(stoppedAt).toMatch(/^[0-9a-f]{64}$/);
    let examined = first.examinedFiles;
    for (let runs = 1; (await cursor()) !== undefined && runs <= total; runs++) {
      const before = await cursor();
      const run = await sweepUnnamedFiles(h.deps, at, 2);
      expect(run.examinedFiles).toBeLessThanOrEqual(2);
      const now = await cursor();
      if (now !== undefined) expect(now > before!).toBe(true); // on from where the last run stopped
      examined += run.examinedFiles;
    }
    // One pass looked at every file once; the next run starts over (no cursor).
    expect(examined).toBe(total);
    for (const file of left) expect(existsSync(file)).toBe(false);
  });

  it("deletes uploads never sent once a day old, in the daily job", async () => {
    const { id } = await uploaded(new TextEncoder().encode("never sent"), "unsent.txt");
    const sent = await uploaded(new TextEncoder().encode("sent along"), "sent.txt");
    expect((await send({ message: "With this", attachments: [sent.id] })).status).toBe(200);
    await runDailyRollover(h.deps, { scheduledTime: new Date(h.clock.now().getTime() + 86_400_000 + 1000) });
    await expectError(await h.request(`/attachments/${id}`, { token }), 404);
    expect((await h.request(`/attachments/${sent.id}`, { token })).status).toBe(200);
  });
});
