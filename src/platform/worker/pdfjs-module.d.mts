// The types of pdfjs-module.mjs beside this file: a link to unpdf's serverless build of pdf.js,
// which the Worker loads as a module of its own (see src/worker.ts and wrangler.toml).
export * from "unpdf/pdfjs";
