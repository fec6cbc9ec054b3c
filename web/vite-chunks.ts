// How the client's shared code is split into files. Left to the bundler, every combination
// of pages using a module becomes a file of its own: a dozen files of a few hundred bytes for
// the chat or Settings, each a request a phone's browser waits on (six at a time over
// HTTP/1.1, each a round trip or more). Three groups instead:
//   markdown      what the public share page shares with the app to show a reply (Markdown,
//                 its sanitizer, attachments' views);
//   share-common  the rest the share page shares with the app (dates, plain text), so that
//                 the share page loads no app code and Settings no Markdown;
//   app-common    what the signed-in app's parts (its shell, the chat, the navigator,
//                 Settings, the archive, the Admin area) share among themselves.
// The page's entry keeps its own modules (a group that took one would make every page load
// it), as does the login screen.
import type { Plugin } from "vite";

/** The module graph, known once the build has read every module (before chunks are made). */
const graph = { entry: new Set<string>(), share: new Set<string>(), login: new Set<string>(), ready: false };

/** `roots` and everything they import, each after what it imports (web/vite-route-pages.ts orders chunks by it). */
export function closure<T>(roots: readonly T[], imports: (node: T) => Iterable<T>): T[] {
  const seen = new Set<T>();
  const ordered: T[] = [];
  const visit = (node: T) => {
    if (seen.has(node)) return;
    seen.add(node);
    for (const next of imports(node)) visit(next);
    ordered.push(node);
  };
  for (const root of roots) visit(root);
  return ordered;
}

const staticClosure = (roots: string[], imports: (id: string) => readonly string[]) => new Set(closure(roots, imports));

/** Reads the module graph for the groups below (add it to the build's plugins). */
export function moduleGraph(): Plugin {
  return {
    name: "module-graph",
    apply: "build",
    buildEnd() {
      const ids = [...this.getModuleIds()];
      const find = (path: string) => {
        const id = ids.find((m) => m.endsWith(`/web/src/${path}`));
        if (!id) throw new Error(`vite-chunks: no module web/src/${path}`);
        return id;
      };
      const imports = (id: string) => this.getModuleInfo(id)?.importedIds ?? [];
      graph.entry = staticClosure([find("main.tsx")], imports);
      const outside = (set: Set<string>) => new Set([...set].filter((id) => !graph.entry.has(id)));
      graph.share = outside(staticClosure([find("share/share-page.tsx")], imports));
      graph.login = outside(staticClosure([find("login/login-screen.tsx"), find("login/auth-callback.tsx")], imports));
      graph.ready = true;
    },
  };
}

/** The graph, once moduleGraph() has read it. */
const known = () => {
  if (!graph.ready) throw new Error("vite-chunks: the module-graph plugin did not run");
  return graph;
};

/**
 * Parts of a package the entry imports that only the app uses: the entry's import of the
 * package's index counts them as the entry's, but the bundler leaves them out of it (unused
 * there), and alone they were two more files. web/vite-route-pages.ts fails the build should
 * the entry ever need app-common.
 */
const APP_ONLY_PARTS = /\/node_modules\/@tanstack\/(?:react-query|query-core)\/build\/modern\/(?:useMutation|mutationObserver|useInfiniteQuery|infiniteQueryObserver)\.js$/;

/** Of share-common, Markdown's rendering and sanitizing (and attachments' views): a file apart, which Settings do without. */
const MARKDOWN = /\/web\/src\/(?:ui\/(?:markdown|markdown-html|prepare)\.tsx?|chat\/attachments\.(?:ts|css))$|\/node_modules\/dompurify\//;

/** The bundler's code-splitting options (build.rolldownOptions.output.codeSplitting). */
export const codeSplitting = {
  // A group takes only the modules its test names, not what they import (which may be the
  // entry's, or the login screen's).
  includeDependenciesRecursively: false,
  groups: [
    { name: "markdown", test: (id: string) => known().share.has(id) && MARKDOWN.test(id), minShareCount: 2, priority: 3 },
    { name: "share-common", test: (id: string) => known().share.has(id), minShareCount: 2, priority: 2 },
    {
      name: "app-common",
      test: (id: string) => (!known().entry.has(id) || APP_ONLY_PARTS.test(id)) && !graph.share.has(id) && !graph.login.has(id),
      minShareCount: 2,
      priority: 1,
    },
  ],
};
