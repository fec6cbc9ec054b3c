import { infiniteQueryOptions } from "@tanstack/react-query";
import { api, must } from "../api/client";

/** The cache of a conversation's pages: `["context", id, leaf]`, so this prefix covers every branch read. */
export const contextKey = (id: string) => ["context", id] as const;

/**
 * A conversation's messages, newest first, a page at a time going back (`before`); refetching
 * after a send walks the pages again from the newest, so none is skipped or shown twice. A
 * search hit opens the branch it is on (`leaf`); paging back with `before` stays on it. Shared
 * by the chat screen and the page's start (app.tsx), which asks for it before the chat's code
 * has arrived.
 */
export function conversationQuery(contextId: string | undefined, focusId: string | null) {
  return infiniteQueryOptions({
    queryKey: [...contextKey(contextId ?? ""), focusId],
    queryFn: ({ pageParam }) =>
      must(
        api.GET("/contexts/{id}", {
          params: {
            path: { id: contextId! },
            query: { limit: 200, ...(pageParam ? { before: pageParam } : focusId ? { leaf: focusId } : {}) },
          },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextBefore,
    enabled: !!contextId,
    // Asked for as the page starts (app.tsx), before the chat mounts: not asked again at once.
    staleTime: 2_000,
  });
}
