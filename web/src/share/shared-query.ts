import { queryOptions } from "@tanstack/react-query";
import { api, must } from "../api/client";

/** A shared conversation's snapshot: asked for by the page's start (app.tsx) while the share page's code arrives. */
export function sharedQuery(token: string) {
  return queryOptions({
    queryKey: ["shared", token],
    queryFn: () => must(api.GET("/shared/{token}", { params: { path: { token } } })),
    retry: false,
    // Asked for as the page starts (app.tsx), before the page mounts: not asked again at once.
    staleTime: 2_000,
  });
}
