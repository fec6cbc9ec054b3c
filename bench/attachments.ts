// Attachments: a 10 MB image upload's work (type sniffing, SHA-256, the atomic file write) and
// a 100-page PDF's text extraction, each timed with its memory and how long it held the event
// loop (the longest delay of a 10 ms timer running beside it). Writes "Attachments" in BENCHMARKS.md.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { documentText, sniff } from "../src/features/attachments/file-kinds";
import { hex } from "../src/platform/encoding";
import { fileBlobStore } from "../src/platform/node/file-blob-store";
import { pdf, png } from "../test/support/files";
import { machine, writeSection } from "./support";

interface Figure {
  ms: number;
  loopBlockedMs: number;
  rssMiB: number;
}

async function measure(work: () => Promise<unknown>): Promise<Figure> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 5);
  delay.enable();
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  // The delay of the timer that was due during the work is recorded once the loop turns again.
  await new Promise((resolve) => setTimeout(resolve, 25));
  delay.disable();
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  return { ms, loopBlockedMs: delay.max / 1e6, rssMiB: (rssPeak - rssBefore) / 1024 / 1024 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function repeated(runs: number, work: () => Promise<unknown>): Promise<Figure> {
  await work(); // warm: modules loaded, code compiled
  const figures: Figure[] = [];
  for (let i = 0; i < runs; i++) figures.push(await measure(work));
  return { ms: median(figures.map((f) => f.ms)), loopBlockedMs: median(figures.map((f) => f.loopBlockedMs)), rssMiB: median(figures.map((f) => f.rssMiB)) };
}

const dir = mkdtempSync(join(tmpdir(), "bench-attachments-"));
const store = fileBlobStore(dir);
const image = png(10 * 1024 * 1024);
let n = 0;
const upload = await repeated(5, async () => {
  await sniff(image, "big.png");
  // A different key each run, so that every run writes its file.
  image[image.length - 13] = n++ & 0xff;
  const key = hex(new Uint8Array(await crypto.subtle.digest("SHA-256", image)));
  await store.put(key, image);
});
const book = pdf(Array.from({ length: 100 }, (_, i) => `Page ${i + 1}: ${"Monstera deliciosa grows in bright, indirect light. ".repeat(8)}`));
const extraction = await repeated(3, () => documentText(book, "application/pdf", "book.pdf"));
rmSync(dir, { recursive: true, force: true });

const row = (what: string, f: Figure) => `| ${what} | ${f.ms.toFixed(0)} | ${f.loopBlockedMs.toFixed(0)} | ${f.rssMiB.toFixed(0)} |`;
writeSection(
  "Attachments",
  `${machine()}; the median of 5 runs (the PDF: 3) after one to warm up, in this process.

| work | time, ms | event loop held, ms (longest) | memory (RSS growth), MiB |
|---|---:|---:|---:|
${row("10 MB PNG: sniff, SHA-256 (crypto.subtle), atomic write to the data folder", upload)}
${row(`100-page PDF (${(book.length / 1024).toFixed(0)} KiB): text extraction with unpdf`, extraction)}

Hashing runs on libuv's pool and the write is asynchronous, so an image upload holds the event
loop only for the sniffing and the copies. PDF extraction (pdf.js) runs on the main thread but
works a page at a time through promises, so other requests are served between its pages: the
longest hold is the figure above, not the whole extraction. That is why it is not moved to a
worker thread (which would need a second bundle beside the database thread's,
scripts/build-server.mjs). Memory is the RSS growth of a warm process: the file is held once
as it arrives (multipart) and once as bytes.
`,
);
console.log({ upload, extraction });
