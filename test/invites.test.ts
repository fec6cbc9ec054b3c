import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createApp } from "../src/app";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";

// Invites for SIGN_UP=invite, made by admins: a code shown once, stored hashed, used up by
// sign-ups, revoked; the accounts start on the invite's plan.

const PLANS = JSON.stringify([
  { id: "free", name: "Free", dailyCredits: 5, models: "*", default: true },
  { id: "team", name: "Team", dailyCredits: 50, models: "*" },
]);

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { SIGN_UP: "invite", PLANS, ADMINS: "boss@example.com" } });
});
afterAll(() => h.close());

const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const signUp = async (name: string, inviteCode?: string) =>
  h.request("/auth/session", { method: "POST", json: { accessToken: await h.signIn(name), ...(inviteCode ? { inviteCode } : {}) } });

describe("invites", () => {
  it("makes a code shown once, lists its uses and who used them, gives the invite's plan, and revokes it", async () => {
    // The admin signed in once while sign-up was open (docs/operating.md: the first admin).
    const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
    const whileOpen = createApp(() => ({ ...h.deps, config: { ...h.deps.config, SIGN_UP: "open" as const } }));
    expect((await whileOpen.request("/me", { headers: { Authorization: `Bearer ${boss}` } })).status).toBe(200);
    const made = await h.request("/admin/invites", { method: "POST", token: boss, json: { uses: 2, plan: "team", note: "the team", expiresAt: "2026-12-01T00:00:00Z" } });
    expect(made.status).toBe(201);
    const invite = await json<{ id: string; code: string; usesLeft: number; plan: string }>(made);
    expect(invite).toMatchObject({ usesLeft: 2, plan: "team", expiresAt: "2026-12-01T00:00:00.000Z" });
    // Only its SHA-256 is kept.
    const stored = await h.db.all<{ code_hash: string }>(sql`select code_hash from invites where id = ${invite.id}`);
    expect(stored[0]!.code_hash).not.toContain(invite.code);

    await expectError(await signUp("no-code"), 403, undefined, "invite_required");
    await expectError(await signUp("bad-code", "nope"), 403, /not valid/, "invite_invalid");
    const joined = await signUp("invited", invite.code);
    expect(joined.status).toBe(200);
    const { accessToken } = await json<{ accessToken: string }>(joined);
    expect(await json(h.request("/credits", { token: accessToken }))).toMatchObject({ allowance: 50, plan: { id: "team" } });

    const list = await json<{ items: Array<{ id: string; usesLeft: number; usedBy: Array<{ name: string }>; code?: string }> }>(h.request("/admin/invites", { token: boss }));
    const listed = list.items.find((i) => i.id === invite.id)!;
    expect(listed).toMatchObject({ usesLeft: 1, usedBy: [{ name: "invited" }] });
    expect(listed.code).toBeUndefined();

    expect((await h.request(`/admin/invites/${invite.id}`, { method: "DELETE", token: boss })).status).toBe(204);
    await expectError(await signUp("too-late", invite.code), 403, undefined, "invite_invalid");
    await expectError(await h.request(`/admin/invites/${invite.id}`, { method: "DELETE", token: boss }), 404, undefined, "invite_not_found");
    const audit = await json<{ items: Array<{ action: string; targetId: string }> }>(h.request("/admin/audit?limit=2", { token: boss }));
    expect(audit.items.map((e) => e.action)).toEqual(["invite.delete", "invite.create"]);
  });

  it("refuses an expired invite, and an invite for a plan PLANS lacks", async () => {
    const boss = await h.signIn("boss", { email: "boss@example.com", email_verified: true });
    await expectError(await h.request("/admin/invites", { method: "POST", token: boss, json: { uses: 1, plan: "gold" } }), 400, /no plan 'gold'/, "plan_not_found");
    const invite = await json<{ code: string }>(h.request("/admin/invites", { method: "POST", token: boss, json: { uses: 1, expiresAt: "2026-11-22T12:30:00Z" } }));
    h.clock.set("2026-11-22T13:00:00.000Z");
    await expectError(await signUp("expired", invite.code), 403, undefined, "invite_invalid");
  });
});
