import { queryOptions } from "@tanstack/react-query";
import { api, must } from "../api/client";

/**
 * The server's models. While none can answer, asked again every 10 seconds: the operator
 * may be starting Ollama right now (the server looks for it every 30 s). Asked for as the
 * page starts too (app.tsx).
 */
export const modelsQuery = () =>
  queryOptions({
    queryKey: ["models"],
    queryFn: () => must(api.GET("/models")),
    staleTime: 60_000,
    refetchInterval: (query) => (query.state.data && !query.state.data.some((m) => m.available) ? 10_000 : false),
  });
