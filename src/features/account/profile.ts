import { eq, sql } from "drizzle-orm";
import type { Principal } from "../../platform/auth/principal";
import type { Db } from "../../platform/db";
import { users, type StoredPreferences, type StoredPreset } from "../../../schema/index";
import { upsertUser } from "../../platform/auth/users";
import { DEFAULT_MODEL_ID } from "../../platform/models/catalog";
import type { ModelRegistry } from "../../platform/models/registry";

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
  createdAt: Date;
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
 * The caller's profile. By JWT the user is created on first sight (or has its identity
 * details refreshed from the token) in the same statement that reads it; by API key the
 * user exists already and is read. One round trip either way. Null only when the user
 * behind an API key has gone.
 */
export async function getProfile(db: Db, principal: Principal, now: Date, defaultModel: string): Promise<Profile | null> {
  if (principal.via === "jwt") {
    const [row] = await upsertUser(db, principal, now);
    return toProfile(row!, defaultModel);
  }
  const [row] = await db.select().from(users).where(eq(users.id, principal.userId)).limit(1);
  return row ? toProfile(row, defaultModel) : null;
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
): Promise<Profile | null> {
  const set: Partial<Record<"name" | "avatarUrl" | "preferences" | "presets", unknown>> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.avatarUrl !== undefined) set.avatarUrl = changes.avatarUrl;
  if (changes.presets !== undefined) set.presets = changes.presets;
  if (changes.preferences !== undefined && Object.keys(changes.preferences).length > 0) {
    set.preferences = sql`json_patch(${users.preferences}, ${JSON.stringify(changes.preferences)})`;
  }
  if (Object.keys(set).length === 0) return getProfile(db, principal, now, defaultModel);

  const update = db
    .update(users)
    .set(set as Partial<typeof users.$inferInsert>)
    .where(eq(users.id, principal.userId))
    .returning();
  if (principal.via === "jwt") {
    const [, updated] = await db.batch([upsertUser(db, principal, now), update]);
    return toProfile(updated[0]!, defaultModel);
  }
  const [row] = await update;
  return row ? toProfile(row, defaultModel) : null;
}

function toProfile(row: UserRow, defaultModel: string): Profile {
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
    createdAt: row.createdAt,
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

