import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, must, type Context, type Schemas } from "../api/client";

/** One list of contexts (all ungrouped ones, or one group's), a page at a time by cursor. */
export function useContextPages(groupId: string, enabled = true) {
  return useInfiniteQuery({
    queryKey: ["contexts", "list", groupId],
    queryFn: ({ pageParam }) =>
      must(api.GET("/contexts", { params: { query: { limit: 50, groupId, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor,
    enabled,
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

/** Rename, move and delete: each refreshes every list the context may be in. */
export function useContextActions() {
  const client = useQueryClient();
  const refresh = () => {
    void client.invalidateQueries({ queryKey: ["contexts"] });
    void client.invalidateQueries({ queryKey: ["groups"] });
  };
  const update = useMutation({
    mutationFn: ({ id, patch }: { id: string; patch: Schemas["ContextPatch"] }) =>
      must(api.PATCH("/contexts/{id}", { params: { path: { id } }, body: patch })),
    onSuccess: (context: Context) => {
      void client.invalidateQueries({ queryKey: ["context", context.id] });
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => must(api.DELETE("/contexts/{id}", { params: { path: { id } } })),
    onSuccess: (_: unknown, id: string) => {
      client.removeQueries({ queryKey: ["context", id] });
      refresh();
    },
  });
  const createGroup = useMutation({
    mutationFn: (name: string) => must(api.POST("/groups", { body: { name } })),
    onSuccess: refresh,
  });
  return { update, remove, createGroup };
}
