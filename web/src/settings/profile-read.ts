import { queryOptions } from "@tanstack/react-query";
import { api, must } from "../api/client";
import { applyTheme } from "../ui/theme";

// The profile's read, apart from its updates (profile-query.ts): the page's start (app.tsx)
// asks for it, and carries no more than this.

export const profileKey = ["me"] as const;

/** The profile; its theme preference wins over this browser's copy once it arrives. */
export const profileQuery = () =>
  queryOptions({
    queryKey: profileKey,
    queryFn: async () => {
      const profile = await must(api.GET("/me"));
      applyTheme(profile.preferences.theme);
      return profile;
    },
    staleTime: 30_000,
  });
