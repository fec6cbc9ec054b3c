import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The docs and the code's comments point at files, headings and other documents; these
// tests keep every such pointer true, so that a rename or a removal updates its docs in
// the same change. (What the docs say the service answers is checked by running their
// examples: test/docs-examples.test.ts.)

const ROOT = resolve(import.meta.dirname, "..");
const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).trim().split("\n");
const exists = (path: string) => existsSync(join(ROOT, path));

const markdown = tracked.filter((f) => f.endsWith(".md") && !f.startsWith("migrations/"));
const sources = tracked.filter((f) => /^(src|web\/src|web\/scripts|scripts|bench|schema|test)\/.*\.(ts|tsx|mjs)$/.test(f));
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
/** Git-ignored, and written by `npm run typecheck` only (web/scripts/openapi-types.ts): a fresh clone's test run has none. */
const WRITTEN_BY_TYPECHECK = new Set(["web/src/api/schema.d.ts"]);

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N} -]/gu, "")
    .replace(/ /g, "-");
}

describe("the docs", () => {
  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const file of markdown) {
      const text = read(file);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue; // http(s), mailto
        const [path, anchor] = target!.split("#");
        const resolved = path ? join(dirname(file), path) : file;
        if (path && !exists(resolved)) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor && resolved.endsWith(".md")) {
          const headings = [...read(resolved).matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1]!));
          if (!headings.includes(anchor)) broken.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("and the code's comments name only files of this repository", () => {
    const missing: string[] = [];
    const pathPattern = /(?<![\w./-])((?:src|test|web|bench|scripts|schema|migrations|docs|\.ci)\/[\w./-]*[\w/])/g;
    // BENCHMARKS.md is a log: its older entries name files as they were then.
    for (const file of [...markdown, ...sources].filter((f) => f !== "BENCHMARKS.md")) {
      for (const [, path] of read(file).matchAll(pathPattern)) {
        if (/[<*{]/.test(path!)) continue; // a placeholder: web/src/<screen>/, src/features/*
        if (!exists(path!.replace(/\/$/, "")) && !WRITTEN_BY_TYPECHECK.has(path!)) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("and name only Markdown documents the repository has", () => {
    const names = new Set(markdown.map((f) => f.split("/").at(-1)!));
    const missing: string[] = [];
    for (const file of [...markdown, ...sources]) {
      // A download's file name (filename="Monstera.md") names no document.
      for (const [, name] of read(file).matchAll(/(?<![\w/.-]|filename=")([A-Z][A-Za-z-]*\.md)\b/g)) {
        if (!names.has(name!)) missing.push(`${file}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
