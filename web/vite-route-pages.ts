// One copy of index.html for each kind of page (web/dist/pages/<kind>.html), each naming the
// code its page will load (<link rel="modulepreload">, and the stylesheets that code imports),
// so that the browser asks for it with the page's entry instead of once the entry has run and
// asked for it (on a phone's network, a round trip and the entry's download later). The
// server answers each address with its kind's copy (src/platform/http/web-client.ts).
import type { Plugin } from "vite";
import { closure } from "./vite-chunks.ts";

/** Each kind of page and the modules (from web/) it imports as it starts; keep beside web/src/app.tsx's startEarly. */
export const ROUTE_PAGES: Record<string, string[]> = {
  login: ["src/login/login-screen.tsx"],
  chat: ["src/app-shell.tsx", "src/chat/chat-page.ts"],
  settings: ["src/app-shell.tsx", "src/settings/settings-screen.tsx"],
  share: ["src/share/share-page.tsx"],
};

interface Chunk {
  type: "chunk";
  fileName: string;
  facadeModuleId: string | null;
  imports: string[];
  viteMetadata?: { importedCss: Set<string> };
}

/** The chunks made from `modules` (paths in web/). */
function chunksOf(chunks: Chunk[], modules: string[]): Chunk[] {
  return modules.map((module) => {
    const chunk = chunks.find((c) => c.facadeModuleId?.endsWith(`/web/${module}`));
    if (!chunk) throw new Error(`route-pages: no chunk is made from web/${module}; is it still imported with import()?`);
    return chunk;
  });
}

/** `roots` and every chunk they import (statically), each after the chunks it imports. */
function chunkClosure(chunks: Chunk[], roots: Chunk[]): Chunk[] {
  const byFile = new Map(chunks.map((c) => [c.fileName, c]));
  return closure(roots, (chunk) => chunk.imports.flatMap((file) => byFile.get(file) ?? []));
}

export function routePages(): Plugin {
  return {
    name: "route-pages",
    apply: "build",
    enforce: "post",
    generateBundle(_options, bundle) {
      const html = bundle["index.html"];
      if (html?.type !== "asset") throw new Error("route-pages: index.html is not in the bundle");
      const index = String(html.source);
      const chunks = Object.values(bundle).filter((c): c is Chunk & (typeof bundle)[string] => c.type === "chunk");
      // What index.html loads already: the entry and the chunks Vite preloads with it.
      const entry = chunks.find((c) => "isEntry" in c && c.isEntry && index.includes(`/${c.fileName}"`));
      if (!entry) throw new Error("route-pages: index.html's entry chunk was not found");
      const loaded = new Set(chunkClosure(chunks, [entry]).map((c) => c.fileName));
      // Shared code of some pages only (web/vite-chunks.ts), which every page would then load.
      const common = [...loaded].filter((file) => /^assets\/(?:app|share)-common-/.test(file));
      if (common.length) throw new Error(`route-pages: the entry imports ${common.join(", ")}; see web/vite-chunks.ts`);
      for (const [kind, modules] of Object.entries(ROUTE_PAGES)) {
        const needed = chunkClosure(chunks, chunksOf(chunks, modules)).filter((c) => !loaded.has(c.fileName));
        const css = new Set(needed.flatMap((c) => [...(c.viteMetadata?.importedCss ?? [])]));
        const links = [
          ...[...css].map((file) => `<link rel="preload" as="style" crossorigin href="/${file}">`),
          ...needed.map((c) => `<link rel="modulepreload" crossorigin href="/${c.fileName}">`),
        ];
        this.emitFile({ type: "asset", fileName: `pages/${kind}.html`, source: index.replace("</head>", `  ${links.join("\n    ")}\n  </head>`) });
      }
    },
  };
}
