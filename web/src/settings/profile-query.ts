import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, must, type Profile, type Schemas } from "../api/client";
import { applyTheme } from "../ui/theme";

export const profileKey = ["me"] as const;

/** The profile; its theme preference wins over this browser's copy once it arrives. */
export function useProfile() {
  return useQuery({
    queryKey: profileKey,
    queryFn: async () => {
      const profile = await must(api.GET("/me"));
      applyTheme(profile.preferences.theme);
      return profile;
    },
    staleTime: 30_000,
  });
}

export function useUpdateProfile() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (patch: Schemas["ProfilePatch"]) => must(api.PATCH("/me", { body: patch })),
    onSuccess: (profile: Profile) => {
      applyTheme(profile.preferences.theme);
      client.setQueryData(profileKey, profile);
    },
  });
}
