// The Worker bundle's stand-in for `unpdf/pdfjs` (see [alias] in wrangler.toml). unpdf
// imports its pdf.js with a literal dynamic import, which wrangler would inline: 520 KiB
// gzipped, parsed at every isolate's start though only a PDF upload uses it. The Worker
// hands unpdf its own loader instead (src/worker.ts), which imports pdf.js as a module of
// its own, so this is never evaluated; if it ever were, it says why instead of failing
// somewhere inside unpdf.
throw new Error("pdf.js is not in the Worker's bundle: it is loaded as its own module (src/platform/worker/pdfjs-module.mjs), handed to unpdf by src/worker.ts");
