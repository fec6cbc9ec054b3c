import { useState } from "preact/hooks";
import type { Preferences, Profile } from "../api/client";
import { useModels } from "../chat/model-picker";
import { Avatar } from "../ui/avatar";
import { useProfile, useUpdateProfile } from "./profile-query";

const LANGUAGES = [
  ["en", "English"],
  ["fr", "Français"],
  ["de", "Deutsch"],
  ["es", "Español"],
  ["it", "Italiano"],
  ["pt", "Português"],
  ["nl", "Nederlands"],
  ["ja", "日本語"],
  ["zh", "中文"],
] as const;

/** Name, avatar, default model, language, voice input and theme (saved in the profile). */
export function ProfileSection() {
  const profile = useProfile();
  // Until the profile arrives its form shows, disabled and without values: the page has its
  // shape (and its largest text) at once, nothing moves when the values come, and nobody
  // types into a field the answer would then fill. Made anew for each person's profile.
  return <ProfileForm key={profile.data?.id ?? "loading"} profile={profile.data} />;
}

function ProfileForm({ profile }: { profile: Profile | undefined }) {
  const models = useModels();
  const save = useUpdateProfile();
  const [name, setName] = useState(profile?.name ?? "");
  const [avatarUrl, setAvatarUrl] = useState(profile?.avatarUrl ?? "");
  const [saved, setSaved] = useState(false);
  const prefs = profile?.preferences;
  const loading = !prefs;
  const setPref = (patch: Partial<Preferences>) => save.mutate({ preferences: patch });

  return (
    <div class="stack wide-stack" aria-busy={loading}>
      <section class="card" aria-labelledby="appearance">
        <h2 id="appearance">Appearance</h2>
        <fieldset class="segmented">
          <legend>Theme</legend>
          {(["light", "dark", "auto"] as const).map((t) => (
            <label key={t} class={prefs?.theme === t ? "checked" : ""}>
              <input type="radio" name="theme" value={t} checked={prefs?.theme === t} disabled={loading} onChange={() => setPref({ theme: t })} />
              {t === "auto" ? "Auto (system)" : t === "light" ? "Light" : "Dark"}
            </label>
          ))}
        </fieldset>
      </section>

      <form
        class="card stack"
        aria-labelledby="profile-heading"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          save.mutate({ name: name.trim(), avatarUrl: avatarUrl.trim() || null }, { onSuccess: () => setSaved(true) });
        }}
      >
        <h2 id="profile-heading">Profile</h2>
        <div class="profile-row">
          <Avatar url={avatarUrl} name={name} alt="Your avatar" large />
          <div class="stack grow">
            <label class="field">
              <span>Name</span>
              <input required maxLength={100} value={name} disabled={loading} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <label class="field">
              <span>Avatar image URL</span>
              <input
                type="url"
                placeholder="https://…"
                value={avatarUrl}
                disabled={loading}
                aria-describedby="avatar-hint"
                onInput={(e) => setAvatarUrl(e.currentTarget.value)}
              />
            </label>
            <p class="muted small" id="avatar-hint">
              Pictures load only from the hosts this server allows (your sign-in provider's, for instance); from anywhere else,
              your initial shows instead.
            </p>
          </div>
        </div>
        <div class="row-actions">
          <button class="button primary" type="submit" disabled={loading || save.isPending}>
            Save profile
          </button>
          {saved && <span role="status">Saved.</span>}
        </div>
        {profile?.identity.email && <p class="muted small">Signed in as {profile.identity.email}</p>}
      </form>

      <section class="card stack" aria-labelledby="chat-prefs">
        <h2 id="chat-prefs">Chat</h2>
        <label class="field">
          <span>Default model</span>
          <select value={prefs?.defaultModel} disabled={loading} onChange={(e) => setPref({ defaultModel: e.currentTarget.value as Preferences["defaultModel"] })}>
            {(models.data ?? []).map((m) => (
              <option key={m.id} value={m.id} disabled={!m.available}>
                {m.name}
                {m.available ? "" : " (unavailable)"}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Language</span>
          <select value={prefs?.language} disabled={loading} onChange={(e) => setPref({ language: e.currentTarget.value })}>
            {prefs && !LANGUAGES.some(([code]) => code === prefs.language) && <option value={prefs.language}>{prefs.language}</option>}
            {LANGUAGES.map(([code, label]) => (
              <option key={code} value={code}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label class="check">
          <input type="checkbox" checked={prefs?.voiceInput ?? false} disabled={loading} onChange={(e) => setPref({ voiceInput: e.currentTarget.checked })} />
          Voice input (a microphone button in the composer)
        </label>
      </section>
      {save.isError && (
        <p role="alert" class="error">
          {save.error.message}
        </p>
      )}
    </div>
  );
}
