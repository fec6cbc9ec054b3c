import { useQuery } from "@tanstack/react-query";

/** What GET /client-config tells the browser about this deployment. */
export interface ClientConfig {
  auth:
    | { mode: "local" }
    | { mode: "oidc"; issuer: string; clientId: string; scopes: string; audience: string | null };
  transcription: { available: boolean; maxBytes: number; maxSeconds: number };
}

export async function fetchClientConfig(): Promise<ClientConfig> {
  const response = await fetch("/client-config", { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`the server did not say how to log in (${response.status})`);
  return (await response.json()) as ClientConfig;
}

export function useClientConfig() {
  return useQuery({ queryKey: ["client-config"], queryFn: fetchClientConfig, staleTime: Infinity });
}
