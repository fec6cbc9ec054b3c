import { Link } from "wouter-preact";
import { AuditSection } from "./audit-section";
import { InvitesSection } from "./invites-section";
import { PeopleSection } from "./people-section";
import { PersonPage } from "./person-page";
import { UsageSection } from "./usage-section";
import "./admin.css";

// The Admin area: the operator's console in the web client, for admins only (the shell
// shows "not available" to anyone else and never loads this code for them). Its pages sit
// under /admin beside the console's API, on paths the API does not serve: the Usage tab is
// /admin/usage-report, since GET /admin/usage is the report itself.

const SECTIONS = [
  { id: "people", label: "People" },
  { id: "usage-report", label: "Usage" },
  { id: "invite-codes", label: "Invites" },
  { id: "audit-log", label: "Audit" },
] as const;

/** /admin/… : `path` is what follows /admin/ ("", "people", "people/usr_…", "usage-report", …). */
export function AdminScreen({ path }: { path: string }) {
  const [section = "people", personId] = path.split("/").filter(Boolean);
  const current = SECTIONS.find((s) => s.id === section);
  return (
    <section class="settings admin" aria-labelledby="admin-title">
      <h1 id="admin-title">Admin</h1>
      <nav class="tabs" aria-label="Admin sections">
        {SECTIONS.map((s) => (
          <Link key={s.id} href={`/admin/${s.id}`} class="tab" aria-current={s.id === current?.id ? "page" : undefined}>
            {s.label}
          </Link>
        ))}
      </nav>
      {section === "people" && (personId ? <PersonPage id={decodeURIComponent(personId)} /> : <PeopleSection />)}
      {section === "usage-report" && <UsageSection />}
      {section === "invite-codes" && <InvitesSection />}
      {section === "audit-log" && <AuditSection />}
      {!current && <p class="muted">No such page in the Admin area.</p>}
    </section>
  );
}
