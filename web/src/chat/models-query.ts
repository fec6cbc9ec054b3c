import { queryOptions } from "@tanstack/react-query";
import { api, type Model, must, type Profile } from "../api/client";
import { profileKey } from "../settings/profile-read";

export const modelsKey = ["models"] as const;

/**
 * The server's models. While none can answer, asked again every 10 seconds: the operator
 * may be starting Ollama right now (the server looks for it every 30 s). Asked for as the
 * page starts too (app.tsx).
 */
export const modelsQuery = () =>
  queryOptions({
    queryKey: modelsKey,
    queryFn: async ({ client }) => {
      const models = await must(api.GET("/models"));
      const previous = client.getQueryData<Model[]>(modelsKey);
      const before = previous?.find((m) => m.default)?.id;
      const now = models.find((m) => m.default)?.id;
      // The profile names the server's default until the person picks one, and that default
      // changes when the models do (a local Ollama found). The profile read before then names
      // the old one: it is the new one now, before this list is shown, so the page never offers
      // a model that was only the default (and is not available); the read that follows says
      // whether the person had chosen it. The first list is as new as the profile read beside it.
      if (previous && now !== undefined && now !== before) {
        client.setQueryData<Profile>(profileKey, (profile) =>
          profile && profile.preferences.defaultModel === before ? { ...profile, preferences: { ...profile.preferences, defaultModel: now } } : profile,
        );
        void client.invalidateQueries({ queryKey: profileKey });
      }
      return models;
    },
    staleTime: 60_000,
    refetchInterval: (query) => (query.state.data && !query.state.data.some((m) => m.available) ? 10_000 : false),
  });
