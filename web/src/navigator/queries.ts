import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "preact/hooks";
import { api, must, type Context, type Schemas } from "../api/client";

/** Which contexts a list shows: a group's (or `none`), the pinned ones, or the archived ones. */
export type ListFilter = { groupId?: string; pinned?: boolean; archived?: boolean };

/** One list of contexts, a page at a time by cursor. */
export function useContextPages(filter: ListFilter, enabled = true) {
  return useInfiniteQuery({
    queryKey: ["contexts", "list", filter],
    queryFn: ({ pageParam }) =>
      must(api.GET("/contexts", { params: { query: { limit: 50, ...filter, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor,
    enabled,
    // While a conversation is answering, the list is read again now and then, to see it end.
    refetchInterval: (query) => (query.state.data?.pages.some((p) => p.items.some((c) => c.answering)) ? 3000 : false),
  });
}

export function useGroups() {
  return useQuery({ queryKey: ["groups"], queryFn: () => must(api.GET("/groups")) });
}

export function useSearch(q: string) {
  return useQuery({
    queryKey: ["contexts", "search", q],
    queryFn: () => must(api.GET("/contexts/search", { params: { query: { q, limit: 20 } } })),
    enabled: q.trim().length > 0,
    placeholderData: (previous) => previous,
  });
}

/** After a change to a context or a group: every list it may be in is read again. */
function useRefreshLists() {
  const client = useQueryClient();
  return () => {
    void client.invalidateQueries({ queryKey: ["contexts"] });
    void client.invalidateQueries({ queryKey: ["groups"] });
  };
}

// Each action its own hook: a mutation is an observer made at mount, and a row, a folder or
// the top bar needs one or two of them, not all.

/** Rename, move, pin, archive: PATCH /contexts/{id}. */
export function useUpdateContext() {
  const client = useQueryClient();
  const refresh = useRefreshLists();
  return useMutation({
    mutationFn: ({ id, patch }: { id: string; patch: Schemas["ContextPatch"] }) =>
      must(api.PATCH("/contexts/{id}", { params: { path: { id } }, body: patch })),
    onSuccess: (context: Context) => {
      void client.invalidateQueries({ queryKey: ["context", context.id] });
      refresh();
    },
  });
}

export function useRemoveContext() {
  const client = useQueryClient();
  const refresh = useRefreshLists();
  return useMutation({
    mutationFn: (id: string) => must(api.DELETE("/contexts/{id}", { params: { path: { id } } })),
    onSuccess: (_: unknown, id: string) => {
      client.removeQueries({ queryKey: ["context", id] });
      refresh();
    },
  });
}

export function useCreateGroup() {
  const refresh = useRefreshLists();
  return useMutation({ mutationFn: (name: string) => must(api.POST("/groups", { body: { name } })), onSuccess: refresh });
}

/** Rename and delete a group (its conversations stay, in no group: the open one's groupId changes too). */
export function useGroupActions() {
  const client = useQueryClient();
  const refresh = useRefreshLists();
  const renameGroup = useMutation({
    mutationFn: ({ id, name }: { id: string; name: string }) => must(api.PATCH("/groups/{id}", { params: { path: { id } }, body: { name } })),
    onSuccess: refresh,
  });
  const deleteGroup = useMutation({
    mutationFn: (id: string) => must(api.DELETE("/groups/{id}", { params: { path: { id } } })),
    onSuccess: () => {
      refresh();
      void client.invalidateQueries({ queryKey: ["context"] });
    },
  });
  return { renameGroup, deleteGroup };
}

/**
 * The open conversation as the chat screen last read it (GET /contexts/{id}, any branch),
 * or undefined before it has: its name, group, pin and archive state for the top bar and
 * the navigator, without a request of their own.
 */
export function useOpenConversation(id: string | undefined): Context | undefined {
  const client = useQueryClient();
  const read = () => (id ? client.getQueriesData<{ pages: Context[] }>({ queryKey: ["context", id] }).find(([, d]) => d?.pages[0])?.[1]?.pages[0] : undefined);
  const [context, setContext] = useState(read);
  useEffect(() => {
    setContext(read);
    return client.getQueryCache().subscribe((event) => {
      const key = event.query.queryKey;
      if (key[0] === "context" && key[1] === id) setContext(read);
    });
  }, [client, id]);
  return context;
}
