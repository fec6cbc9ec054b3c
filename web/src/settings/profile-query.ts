import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, must, type Profile, type Schemas } from "../api/client";
import { applyTheme } from "../ui/theme";
import { profileKey, profileQuery } from "./profile-read";

export { profileKey };

export function useProfile() {
  return useQuery(profileQuery());
}

export function useUpdateProfile() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (patch: Schemas["ProfilePatch"]) => must(api.PATCH("/me", { body: patch })),
    // Preferences show at once (a radio must not snap back while the request is out).
    onMutate: async (patch) => {
      // A profile read still in flight must not put the old preferences back.
      await client.cancelQueries({ queryKey: profileKey });
      const before = client.getQueryData<Profile>(profileKey);
      if (before && patch.preferences) {
        const preferences = { ...before.preferences, ...patch.preferences };
        client.setQueryData<Profile>(profileKey, { ...before, preferences });
        applyTheme(preferences.theme);
      }
      return { before };
    },
    onError: (_error, _patch, saved) => {
      if (saved?.before) {
        client.setQueryData(profileKey, saved.before);
        applyTheme(saved.before.preferences.theme);
      }
    },
    onSuccess: async (profile: Profile) => {
      // A read of the profile asked while this was out (a page opened meanwhile) may be
      // answered from before the change and arrive after this answer: it must not put the
      // old preferences back.
      await client.cancelQueries({ queryKey: profileKey });
      applyTheme(profile.preferences.theme);
      client.setQueryData(profileKey, profile);
    },
  });
}
