/**
 * Markdown as the text a person reads, for places that show one line or a fragment (the
 * navigator's names, search snippets, titles): `# Title` reads "Title", `**bold** and
 * `code`` reads "bold and code", `| Plant | Water | |---|` reads "Plant · Water". Snippets are cut anywhere, so this works on fragments:
 * marks that lost their partner are dropped too, and nothing here can produce markup.
 */
export function plainText(markdown: string): string {
  // Most names and many snippets hold no mark at all: they only have their spaces folded.
  if (!/[`~![\]#>*+_\\|-]|^\s*\d+[.)]/.test(markdown)) return markdown.replace(/\s+/g, " ").trim();
  return (
    markdown
      // Fences and their language (```js), then images and links by their text.
      .replace(/^[ \t]*(?:`{3,}|~{3,})[^\n`]*$/gm, "")
      .replace(/!\[([^\]]*)\]\([^)]*\)?/g, "$1")
      .replace(/\[([^\]]*)\]\([^)]*\)?/g, "$1")
      // Line starts: headings, quotes, bullets.
      .replace(/^[ \t]{0,3}#{1,6}(?:[ \t]+|$)/gm, "")
      .replace(/^[ \t]{0,3}(?:>[ \t]?)+/gm, "")
      .replace(/^[ \t]*[-*+][ \t]+/gm, "")
      // Tables: their delimiter rows go (|---|:--:|), and the cells read apart with a dot:
      // "| Plant | Water |" reads "Plant · Water".
      .replace(/\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*(?=\s|$))?/g, " ")
      .replace(/(?:[ \t]*\|[ \t]*)+/g, " · ")
      // Emphasis: paired marks, and ** left alone by a cut; single * and _ only around
      // words, so snake_case and __dunder stay.
      .replace(/(\*\*|__|~~)(?=\S)([^\n]*?\S)\1/g, "$2")
      .replace(/\*\*/g, "")
      .replace(/(^|[^\p{L}\p{N}\\])[*_](?=\S)([^*_\n]*?\S)[*_](?![\p{L}\p{N}])/gu, "$1$2")
      .replace(/`+/g, "")
      .replace(/\\([\\`*_{}[\]()#+\-.!>~|])/g, "$1")
      .replace(/\s+/g, " ")
      .replace(/^(?: ?· ?)+|(?: ?· ?)+$/g, "")
      .replace(/ ·(?: ·)+ /g, " · ")
      .trim()
  );
}
