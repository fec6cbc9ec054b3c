import { Link } from "wouter-preact";
import { ApiKeysSection } from "./api-keys-section";
import { DataSection } from "./data-section";
import { PresetsSection } from "./presets-section";
import { ProfileSection } from "./profile-section";
import { SignInSection } from "./sign-in-section";
import { UsageSection } from "./usage-section";

const SECTIONS = [
  { id: "profile", label: "Profile" },
  { id: "presets", label: "Presets" },
  { id: "sign-in", label: "Sign-in" },
  { id: "api-keys", label: "API keys" },
  { id: "usage", label: "Usage" },
  { id: "data", label: "Data" },
] as const;

/** /settings and /settings/:section. */
export function SettingsScreen({ section }: { section: string | undefined }) {
  const current = SECTIONS.find((s) => s.id === section) ?? SECTIONS[0];
  return (
    <section class="settings" aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      <nav class="tabs" aria-label="Settings sections">
        {SECTIONS.map((s) => (
          <Link key={s.id} href={`/settings/${s.id}`} class="tab" aria-current={s.id === current.id ? "page" : undefined}>
            {s.label}
          </Link>
        ))}
      </nav>
      {current.id === "profile" && <ProfileSection />}
      {current.id === "sign-in" && <SignInSection />}
      {current.id === "api-keys" && <ApiKeysSection />}
      {current.id === "usage" && <UsageSection />}
      {current.id === "presets" && <PresetsSection />}
      {current.id === "data" && <DataSection />}
    </section>
  );
}
