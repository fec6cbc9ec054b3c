import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sweepUnnamedFiles } from "../../src/features/attachments/file-sweep";
import { dbFromD1 } from "../../src/platform/db";
import { createLogger } from "../../src/platform/log";
import { r2BlobStore } from "../../src/platform/worker/r2-blob-store";
import worker from "../../src/worker";
import { pdf, png, svg } from "../support/files";
import { call, signIn } from "./support";

// Attachments in workerd: the bytes in miniflare's local R2 (the ATTACHMENTS binding of
// wrangler.toml), the rows in D1, PDF text extracted by unpdf inside the Worker.

const upload = (headers: Record<string, string>, bytes: Uint8Array<ArrayBuffer>, name: string) => {
  const body = new FormData();
  body.set("file", new Blob([bytes]), name);
  return call("/attachments", { method: "POST", headers, body });
};
const send = (headers: Record<string, string>, body: unknown) =>
  call("/chat/send", { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });
const sha256 = async (bytes: Uint8Array<ArrayBuffer>) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("attachments in workerd over D1 and R2", () => {
  it("stores an upload in R2 under its hash and serves it back to its owner only", async () => {
    const auth = await signIn("r2-uploader");
    const res = await upload(auth, png(), "leaf.png");
    expect(res.status).toBe(201);
    const { id, type, kind } = (await res.json()) as { id: string; type: string; kind: string };
    expect({ type, kind }).toEqual({ type: "image/png", kind: "image" });
    expect(await env.ATTACHMENTS.head(await sha256(png()))).not.toBeNull();

    const file = await call(`/attachments/${id}`, { headers: auth });
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/png");
    expect(file.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(png());
    expect((await call(`/attachments/${id}`, { headers: await signIn("r2-stranger") })).status).toBe(404);
  });

  it("refuses SVG (415), a PDF without text (422) and an image for a model without images (400, nothing charged)", async () => {
    const auth = await signIn("r2-refused");
    expect(((await (await upload(auth, svg(), "x.svg")).json()) as { code: string }).code).toBe("attachment_type");
    const scan = await upload(auth, pdf([""]), "scan.pdf");
    expect(scan.status).toBe(422);
    expect(((await scan.json()) as { code: string }).code).toBe("document_without_text");
    const { id } = (await (await upload(auth, png(), "leaf.png")).json()) as { id: string };
    const refused = await send(auth, { message: "What is it?", attachments: [id] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { code: string }).code).toBe("model_without_images");
    const credits = (await (await call("/credits", { headers: auth })).json()) as { used: number };
    expect(credits.used).toBe(0);
    // The first PDF of the run loads pdf.js (1.6 MB) through the test pool's module transform.
  }, 30_000);

  it("sends a PDF's text to the model and deletes the file from R2 with the context", async () => {
    const auth = await signIn("r2-reader");
    const bytes = pdf(["Mist the fern daily."]);
    const { id, pages } = (await (await upload(auth, bytes, "fern.pdf")).json()) as { id: string; pages: number };
    expect(pages).toBe(1);
    const res = await send(auth, { message: "Summarise", attachments: [id] });
    expect(res.status).toBe(200);
    const reply = (await res.json()) as { response: string; contextId: string };
    expect(reply.response).toContain("Mist the fern daily.");
    expect(reply.response).toContain('<document name="fern.pdf" type="application/pdf" pages="1">');

    expect((await call(`/contexts/${reply.contextId}`, { method: "DELETE", headers: auth })).status).toBe(204);
    expect((await call(`/attachments/${id}`, { headers: auth })).status).toBe(404);
    expect(await env.ATTACHMENTS.head(await sha256(bytes))).toBeNull();
  });

  it("erases a person's files from R2 with the account (DELETE /me), but keeps one another person's upload shares", async () => {
    const leaver = await signIn("r2-leaver");
    const stayer = await signIn("r2-stayer");
    const own = new Uint8Array(new TextEncoder().encode("only the leaver uploaded this, in workerd"));
    const shared = png(300);
    expect((await upload(leaver, own, "own.txt")).status).toBe(201);
    expect((await upload(leaver, shared, "shared.png")).status).toBe(201);
    const { id: kept } = (await (await upload(stayer, shared, "mine-too.png")).json()) as { id: string };
    expect(await env.ATTACHMENTS.head(await sha256(own))).not.toBeNull();

    const { id } = (await (await call("/me", { headers: leaver })).json()) as { id: string };
    const erased = await call("/me", { method: "DELETE", headers: { ...leaver, "Content-Type": "application/json" }, body: JSON.stringify({ confirm: id }) });
    expect(erased.status).toBe(204);
    expect(await env.ATTACHMENTS.head(await sha256(own))).toBeNull();
    expect(await env.ATTACHMENTS.head(await sha256(shared))).not.toBeNull();
    const file = await call(`/attachments/${kept}`, { headers: stayer });
    expect(file.status).toBe(200);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(shared);
  });

  it("sweeps R2 objects that no row names in the daily job, a bounded part per run, on from where the last stopped", async () => {
    const auth = await signIn("r2-sweeper");
    // An object whose row is gone, as a crash between the row's deletion and the object's leaves it.
    const orphan = new Uint8Array(new TextEncoder().encode("an R2 object whose row is gone"));
    await env.ATTACHMENTS.put(await sha256(orphan), orphan);
    const named = new Uint8Array(new TextEncoder().encode("an R2 object its row still names"));
    expect((await upload(auth, named, "named.txt")).status).toBe(201);
    const later = new Date(Date.now() + 2 * 3600_000); // both objects are then over an hour old

    // A run bounded to one object stops there and says where.
    const deps = { db: dbFromD1(env.DB), log: createLogger("error"), blobs: r2BlobStore(env.ATTACHMENTS) };
    expect(await sweepUnnamedFiles(deps, later, 1)).toMatchObject({ examinedFiles: 1 });
    const position = await env.DB.prepare("select position from job_cursors where name = 'attachment-files'").first<string>("position");
    expect(position).toMatch(/^[0-9a-f]{64}$/);

    // The daily job goes on from there to the end of the bucket, and the next pass starts over.
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: later.getTime(), cron: "0 0 * * *" }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    expect(await env.ATTACHMENTS.head(await sha256(orphan))).toBeNull();
    expect(await env.ATTACHMENTS.head(await sha256(named))).not.toBeNull();
    expect(await env.DB.prepare("select count(*) as n from job_cursors").first<number>("n")).toBe(0);
  });
});
