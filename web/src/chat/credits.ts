import { queryOptions, useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useEffect } from "preact/hooks";
import { api, must, type Credits } from "../api/client";

export const creditsKey = ["credits"] as const;

/** The counter's data; asked for as the page starts (app.tsx), so not asked again at once when the chat mounts. */
export const creditsQuery = () => queryOptions({ queryKey: creditsKey, queryFn: () => must(api.GET("/credits")), staleTime: 2_000 });

export function useCredits() {
  const client = useQueryClient();
  const query = useQuery(creditsQuery());
  // At 00:00 UTC the allowance comes back: ask again then, without a reload.
  const resetAt = query.data?.resetAt;
  useEffect(() => {
    if (!resetAt) return;
    const wait = new Date(resetAt).getTime() - Date.now() + 500;
    const timer = setTimeout(() => void client.invalidateQueries({ queryKey: creditsKey }), Math.max(wait, 500));
    return () => clearTimeout(timer);
  }, [resetAt, client]);
  return query;
}

/** Applies what a reply said about credits (headers or the stream's done event) with no request. */
export function updateCredits(client: QueryClient, update: Partial<Credits> & { remaining: number; resetAt: string }) {
  // A count asked for before this reply (the page's first, still loading) would land after
  // it and show the credits as they were: it is dropped and asked for again, so the last
  // word is the server's.
  if (client.isFetching({ queryKey: creditsKey }) > 0) {
    void client.cancelQueries({ queryKey: creditsKey }, { revert: false, silent: true }).then(() => client.invalidateQueries({ queryKey: creditsKey }));
  }
  client.setQueryData<Credits>(creditsKey, (old) => {
    if (update.allowance !== undefined && update.used !== undefined) return { ...update } as Credits;
    if (!old) return undefined;
    // A new day (resetAt moved) starts from a fresh allowance.
    const allowance = old.allowance;
    return { allowance, remaining: update.remaining, used: Math.max(0, allowance - update.remaining), resetAt: update.resetAt };
  });
}
