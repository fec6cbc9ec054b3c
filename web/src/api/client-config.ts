import { queryOptions, useQuery } from "@tanstack/react-query";
import { api, must, type Schemas } from "./client";

/** What GET /client-config tells the browser about this deployment (how to log in, voice). */
export type ClientConfig = Schemas["ClientConfig"];

export const fetchClientConfig = () => must(api.GET("/client-config"));

export const clientConfigQuery = () => queryOptions({ queryKey: ["client-config"], queryFn: fetchClientConfig, staleTime: Infinity });

export function useClientConfig() {
  return useQuery(clientConfigQuery());
}
