import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, must, type Schemas } from "../api/client";

// The Admin area's server state: the operator's console (/admin/*), cached by TanStack Query
// under ["admin", …], so that an action refreshes every screen that shows what it changed.

export type Person = Schemas["AdminPerson"];
export type PersonDetail = Schemas["AdminPersonDetail"];
export type Plan = Schemas["Plan"];
export type Invite = Schemas["Invite"];
export type CreatedInvite = Schemas["CreatedInvite"];
export type UsageRow = Schemas["UsageReportRow"];
export type AuditEvent = Schemas["AuditEvent"];

export interface PeopleFilters {
  q: string;
  status: "" | "active" | "suspended";
  plan: string;
}

const PAGE = 50;

/** The accounts matching the filters, newest first, a page at a time (by cursor). */
export function usePeople(filters: PeopleFilters) {
  return useInfiniteQuery({
    queryKey: ["admin", "people", filters],
    queryFn: ({ pageParam }) =>
      must(
        api.GET("/admin/users", {
          params: {
            query: {
              limit: PAGE,
              ...(filters.q ? { q: filters.q } : {}),
              ...(filters.status ? { status: filters.status } : {}),
              ...(filters.plan ? { plan: filters.plan } : {}),
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor ?? null,
  });
}

export function usePerson(id: string) {
  return useQuery({ queryKey: ["admin", "person", id], queryFn: () => must(api.GET("/admin/users/{id}", { params: { path: { id } } })) });
}

/** The plans of PLANS: they change only with the server's configuration. */
export function usePlans() {
  return useQuery({ queryKey: ["admin", "plans"], queryFn: () => must(api.GET("/admin/plans")), staleTime: Infinity });
}

export function useUsage(from: string, to: string, groupBy: "day" | "model" | "user") {
  return useQuery({
    queryKey: ["admin", "usage", from, to, groupBy],
    // format=json: the report's JSON (the route's other content type is its CSV).
    queryFn: async () => (await must(api.GET("/admin/usage", { params: { query: { from, to, groupBy, format: "json" } } }))) as Schemas["UsageReport"],
  });
}

export function useInvites() {
  return useQuery({ queryKey: ["admin", "invites"], queryFn: () => must(api.GET("/admin/invites")) });
}

export function useAudit() {
  return useInfiniteQuery({
    queryKey: ["admin", "audit"],
    queryFn: ({ pageParam }) => must(api.GET("/admin/audit", { params: { query: { limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.nextCursor ?? null,
  });
}

/**
 * An action of the console: every admin screen is read again after it (the audit log too),
 * but the plans, which no action changes, and `gone`, an account the action erased.
 */
function useAdminAction<T, R>(run: (input: T) => Promise<R>, gone?: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: run,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ["admin"], predicate: (q) => q.queryKey[1] !== "plans" && !(gone && q.queryKey[2] === gone) });
    },
  });
}

const path = (id: string) => ({ params: { path: { id } } });

export const useSuspend = (id: string) => useAdminAction((reason: string) => must(api.POST("/admin/users/{id}/suspend", { ...path(id), body: { reason } })));
export const useUnsuspend = (id: string) => useAdminAction(() => must(api.POST("/admin/users/{id}/unsuspend", path(id))));
export const useGrant = (id: string) =>
  useAdminAction((grant: { amount: number; note: string }) => must(api.POST("/admin/users/{id}/credits", { ...path(id), body: { amount: grant.amount, ...(grant.note ? { note: grant.note } : {}) } })));
export const useSetPlan = (id: string) => useAdminAction((plan: string) => must(api.PUT("/admin/users/{id}/plan", { ...path(id), body: { plan } })));
export const useErase = (id: string) => useAdminAction(() => must(api.DELETE("/admin/users/{id}", path(id))), id);
export const useCreateInvite = () => useAdminAction((invite: Schemas["NewInvite"]) => must(api.POST("/admin/invites", { body: invite })));
export const useDeleteInvite = () => useAdminAction((id: string) => must(api.DELETE("/admin/invites/{id}", path(id))));
