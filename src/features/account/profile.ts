import { eq, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import type { Db } from "../../platform/db";
import { type identities, users, type StoredPreferences, type StoredPreset } from "../../../schema/index";
import { upsertUser } from "../../platform/auth/users";
import { ensureOwnIdentity, selectSignInMethods, toSignInMethod, type SignInMethodView } from "../../platform/auth/sign-in-methods";
import { DEFAULT_MODEL_ID } from "../../platform/models/catalog";
import type { ModelRegistry } from "../../platform/models/registry";
import { isAdmin, NO_ADMINS, type Admins } from "../../platform/admins";
import { identifiersOf } from "../../platform/auth/admin-check";
import { WALLET_ISSUER } from "../../platform/auth/identity-links";

/** The id a profile shows as its default model until the person picks one. */
export const defaultModelOf = (models: ModelRegistry): string => models.defaultModel()?.id ?? DEFAULT_MODEL_ID;

export interface Preferences {
  theme: "light" | "dark" | "auto";
  defaultModel: string;
  voiceInput: boolean;
  language: string;
}

/** The defaults of the preferences a person has not set; `defaultModel` is the deployment's default model. */
export const DEFAULT_PREFERENCES: Omit<Preferences, "defaultModel"> = {
  theme: "auto",
  voiceInput: true,
  language: "en",
};

/** Named instructions a person keeps, to start a context from. */
export type Preset = StoredPreset;

export interface Profile {
  id: string;
  name: string;
  avatarUrl: string | null;
  preferences: Preferences;
  presets: Preset[];
  identity: { issuer: string; subject: string; email?: string; wallet?: string };
  /** Every way the person signs in to this account (linked sign-in methods). */
  identities: SignInMethodView[];
  createdAt: Date;
  /** `admin` when ADMINS names the account (the operator's console is theirs). */
  role: "admin" | "user";
}

/** A partial update: absent fields stay as they are; preferences merge key by key. */
export interface ProfileChanges {
  name?: string;
  /** null clears the avatar. */
  avatarUrl?: string | null;
  preferences?: Partial<Preferences>;
  /** Replaces the whole list. */
  presets?: Preset[];
}

type UserRow = typeof users.$inferSelect;

/**
 * The caller's profile and sign-in methods. By JWT the user is created on first sight (or
 * has its identity details refreshed from the token) in the same statement that reads it;
 * by session or API key the user exists already and is read. One round trip either way.
 * Null only when the user behind an API key or session has gone.
 */
export async function getProfile(db: Db, principal: Principal, now: Date, defaultModel: string, admins: Admins = NO_ADMINS): Promise<Profile | null> {
  const read =
    principal.via === "jwt" ? upsertUser(db, principal, now) : db.select().from(users).where(eq(users.id, principal.userId)).limit(1);
  const [[row], , methods] = await db.batch([read, ensureOwnIdentity(db, principal.userId), selectSignInMethods(db, principal.userId)]);
  return row ? toProfile(row, methods, defaultModel, roleOf(admins, principal, row, methods)) : null;
}

/** Whether ADMINS names the account, by the row and sign-in methods the profile reads anyway. */
function roleOf(admins: Admins, principal: Principal, row: UserRow, methods: Array<typeof identities.$inferSelect>): Profile["role"] {
  const wallets = methods.filter((m) => m.issuer === WALLET_ISSUER).map((m) => m.subject);
  return isAdmin(admins, identifiersOf(principal, row, wallets)) ? "admin" : "user";
}

/**
 * Applies a partial update and returns the profile as it now is. Preferences merge in SQL
 * (json_patch), so concurrent updates of different keys do not undo each other. One round
 * trip. Null only when the user behind an API key has gone.
 */
export async function updateProfile(
  db: Db,
  principal: Principal,
  changes: ProfileChanges,
  now: Date,
  defaultModel: string,
  admins: Admins,
): Promise<Profile | null> {
  const set: Partial<Record<"name" | "avatarUrl" | "preferences" | "presets", unknown>> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.avatarUrl !== undefined) set.avatarUrl = changes.avatarUrl;
  if (changes.presets !== undefined) set.presets = changes.presets;
  if (changes.preferences !== undefined && Object.keys(changes.preferences).length > 0) {
    set.preferences = sql`json_patch(${users.preferences}, ${JSON.stringify(changes.preferences)})`;
  }
  if (Object.keys(set).length === 0) return getProfile(db, principal, now, defaultModel, admins);

  const update = db
    .update(users)
    .set(set as Partial<typeof users.$inferInsert>)
    .where(eq(users.id, principal.userId))
    .returning();
  const methods = [ensureOwnIdentity(db, principal.userId), selectSignInMethods(db, principal.userId)] as const;
  if (principal.via === "jwt") {
    const [, updated, , rows] = await db.batch([upsertUser(db, principal, now), update, ...methods]);
    return toProfile(updated[0]!, rows, defaultModel, roleOf(admins, principal, updated[0]!, rows));
  }
  const [[row], , rows] = await db.batch([update, ...methods]);
  return row ? toProfile(row, rows, defaultModel, roleOf(admins, principal, row, rows)) : null;
}

function toProfile(row: UserRow, methods: Array<typeof identities.$inferSelect>, defaultModel: string, role: Profile["role"]): Profile {
  const identity: Profile["identity"] = { issuer: row.issuer, subject: row.subject };
  if (row.email !== null) identity.email = row.email;
  if (row.wallet !== null) identity.wallet = row.wallet;
  return {
    id: row.id,
    name: row.name,
    avatarUrl: row.avatarUrl,
    preferences: withDefaults(row.preferences, defaultModel),
    presets: row.presets ?? [],
    identity,
    identities: methods.map(toSignInMethod),
    createdAt: row.createdAt,
    role,
  };
}

function withDefaults(stored: StoredPreferences | null, defaultModel: string): Preferences {
  const s = stored ?? {};
  return {
    theme: s.theme ?? DEFAULT_PREFERENCES.theme,
    defaultModel: s.defaultModel ?? defaultModel,
    voiceInput: s.voiceInput ?? DEFAULT_PREFERENCES.voiceInput,
    language: s.language ?? DEFAULT_PREFERENCES.language,
  };
}

