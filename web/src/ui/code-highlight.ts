// Loaded only when a reply holds a code block (a dynamic import of this file), so the chat's
// first load does not carry highlight.js; and of its common languages only those the blocks
// name, each its own small file (highlight.js's core and two languages are 13 KiB gzipped,
// its common set 53 KiB). A block without a language is guessed, which needs them all.
import hljs from "highlight.js/lib/core";
import type { LanguageFn } from "highlight.js";

/** highlight.js's common set, by name. */
const LANGUAGES: Record<string, () => Promise<{ default: LanguageFn }>> = {
  bash: () => import("highlight.js/lib/languages/bash"),
  c: () => import("highlight.js/lib/languages/c"),
  cpp: () => import("highlight.js/lib/languages/cpp"),
  csharp: () => import("highlight.js/lib/languages/csharp"),
  css: () => import("highlight.js/lib/languages/css"),
  diff: () => import("highlight.js/lib/languages/diff"),
  go: () => import("highlight.js/lib/languages/go"),
  graphql: () => import("highlight.js/lib/languages/graphql"),
  ini: () => import("highlight.js/lib/languages/ini"),
  java: () => import("highlight.js/lib/languages/java"),
  javascript: () => import("highlight.js/lib/languages/javascript"),
  json: () => import("highlight.js/lib/languages/json"),
  kotlin: () => import("highlight.js/lib/languages/kotlin"),
  less: () => import("highlight.js/lib/languages/less"),
  lua: () => import("highlight.js/lib/languages/lua"),
  makefile: () => import("highlight.js/lib/languages/makefile"),
  markdown: () => import("highlight.js/lib/languages/markdown"),
  objectivec: () => import("highlight.js/lib/languages/objectivec"),
  perl: () => import("highlight.js/lib/languages/perl"),
  php: () => import("highlight.js/lib/languages/php"),
  "php-template": () => import("highlight.js/lib/languages/php-template"),
  plaintext: () => import("highlight.js/lib/languages/plaintext"),
  python: () => import("highlight.js/lib/languages/python"),
  "python-repl": () => import("highlight.js/lib/languages/python-repl"),
  r: () => import("highlight.js/lib/languages/r"),
  ruby: () => import("highlight.js/lib/languages/ruby"),
  rust: () => import("highlight.js/lib/languages/rust"),
  scss: () => import("highlight.js/lib/languages/scss"),
  shell: () => import("highlight.js/lib/languages/shell"),
  sql: () => import("highlight.js/lib/languages/sql"),
  swift: () => import("highlight.js/lib/languages/swift"),
  typescript: () => import("highlight.js/lib/languages/typescript"),
  vbnet: () => import("highlight.js/lib/languages/vbnet"),
  wasm: () => import("highlight.js/lib/languages/wasm"),
  xml: () => import("highlight.js/lib/languages/xml"),
  yaml: () => import("highlight.js/lib/languages/yaml"),
};

/** The other names a block may give them (each language's own `aliases`). */
const ALIASES: Record<string, string> = {
  html: "xml", xhtml: "xml", rss: "xml", atom: "xml", xjb: "xml", xsd: "xml", xsl: "xml", plist: "xml", wsf: "xml", svg: "xml",
  sh: "bash", zsh: "bash", h: "c",
  cc: "cpp", "c++": "cpp", "h++": "cpp", hpp: "cpp", hh: "cpp", hxx: "cpp", cxx: "cpp",
  cs: "csharp", "c#": "csharp", md: "markdown", mkdown: "markdown", mkd: "markdown", patch: "diff",
  rb: "ruby", gemspec: "ruby", podspec: "ruby", thor: "ruby", irb: "ruby", golang: "go", gql: "graphql", toml: "ini", jsp: "java",
  js: "javascript", jsx: "javascript", mjs: "javascript", cjs: "javascript", jsonc: "json", json5: "json",
  kt: "kotlin", kts: "kotlin", ktm: "kotlin", ktx: "kotlin", pluto: "lua", mk: "makefile", mak: "makefile", make: "makefile",
  pl: "perl", pm: "perl", mm: "objectivec", objc: "objectivec", "obj-c": "objectivec", "obj-c++": "objectivec", "objective-c++": "objectivec",
  text: "plaintext", txt: "plaintext", py: "python", gyp: "python", ipython: "python", pycon: "python-repl", rs: "rust",
  console: "shell", shellsession: "shell", yml: "yaml", ts: "typescript", tsx: "typescript", mts: "typescript", cts: "typescript", vb: "vbnet",
};

/** What the languages need besides themselves (highlight.js registers sub-languages by name). */
const NEEDS: Record<string, string[]> = { "php-template": ["php", "xml"], markdown: ["xml"], "python-repl": ["python"], shell: ["bash"] };

/** Past this many characters a block is shown plain: guessing a language costs too much. */
const AUTO_DETECT_LIMIT = 20_000;

const canonical = (language: string) => ALIASES[language] ?? language;
const registered = (name: string) => !!hljs.getLanguage(name);

/**
 * Loads the languages blocks named (and, for "" — a block without one — all of them, to guess
 * among). Unknown names are left out: such a block stays plain.
 */
export async function loadLanguages(languages: Iterable<string>): Promise<void> {
  const names = new Set<string>();
  for (const language of languages) {
    for (const name of language === "" ? Object.keys(LANGUAGES) : [canonical(language)]) {
      if (!LANGUAGES[name]) continue;
      names.add(name);
      for (const needed of NEEDS[name] ?? []) names.add(needed);
    }
  }
  const missing = [...names].filter((name) => !registered(name));
  const definitions = await Promise.all(missing.map((name) => LANGUAGES[name]!()));
  missing.forEach((name, i) => {
    hljs.registerLanguage(name, definitions[i]!.default);
  });
}

/**
 * A code block's text as HTML: spans with `hljs-*` classes around escaped text (highlight.js
 * escapes it); null when it stays plain (a language highlight.js does not know, a weak guess);
 * undefined when its language is not loaded yet (loadLanguages, then again). Without a
 * language, the common ones are tried.
 */
export function highlightCode(code: string, language: string | undefined): string | null | undefined {
  if (language) {
    const name = canonical(language);
    if (!LANGUAGES[name]) return hljs.getLanguage(language) ? hljs.highlight(code, { language, ignoreIllegals: true }).value : null;
    if (!registered(name)) return undefined;
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  }
  if (code.length > AUTO_DETECT_LIMIT) return null;
  if (!Object.keys(LANGUAGES).every(registered)) return undefined;
  const guess = hljs.highlightAuto(code);
  // A weak guess paints prose-like text in random colours: better plain.
  return guess.relevance >= 5 ? guess.value : null;
}
