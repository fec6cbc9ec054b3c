import { z } from "@hono/zod-openapi";
import { ApiError } from "../../platform/http/errors";
import { excerpt } from "../../platform/errors";
import type { ModelRegistry } from "../../platform/models/registry";
import { createRouter } from "../../platform/http/router";
import { defaultModelOf, getProfile, updateProfile, type Profile } from "./profile";
import { isSafeAvatarUrl } from "../../platform/auth/users";
import { DisplayName } from "../../platform/http/display-name";
import { serviceId } from "../../platform/http/service-id";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { SignInMethodSchema, signInMethodJson } from "../../platform/http/sign-in-method";
import { CONTROL_CHARS, text } from "../../platform/http/text";
import { MAX_INSTRUCTIONS } from "../contexts/contexts";
import { eraseAccount } from "./erasure";

const AVATAR_MESSAGE = "must be an http(s) URL of at most 2048 characters, or null to clear it";
const LANGUAGE_MESSAGE = "must be a BCP 47 language tag such as en, pt-BR or zh-Hant-TW";

const ProfileName = DisplayName.openapi({ example: "Ada" });

// http(s), a host, no credentials (no `@` before the path), no spaces or control characters.
const AVATAR_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://[^\\s${CONTROL_CHARS}/?#@\\\\]+(?:[/?#][^\\s${CONTROL_CHARS}]*)?$`;

const AvatarUrl = z
  .string({ error: AVATAR_MESSAGE })
  .max(2048, AVATAR_MESSAGE)
  .refine((v) => new RegExp(AVATAR_PATTERN, "u").test(v) && isSafeAvatarUrl(v), AVATAR_MESSAGE)
  .nullable()
  .openapi({ format: "uri", maxLength: 2048, pattern: AVATAR_PATTERN, example: "https://example.com/ada.png" });

// RFC 5646's shape (language, script, region, variants, extensions, private use); the tag
// must also be one Intl accepts, which refuses the odd tag this shape lets through.
const LANGUAGE_PATTERN =
  "^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*" +
  "(?:-[A-WY-Za-wy-z0-9](?:-[A-Za-z0-9]{2,8})+)*(?:-[Xx](?:-[A-Za-z0-9]{1,8})+)?$";

const Language = z
  .string({ error: LANGUAGE_MESSAGE })
  .max(64, LANGUAGE_MESSAGE)
  .refine((v) => new RegExp(LANGUAGE_PATTERN).test(v) && canonicalLanguage(v) !== null, LANGUAGE_MESSAGE)
  .openapi({ example: "en", maxLength: 64, pattern: LANGUAGE_PATTERN });

const PreferencesSchema = z
  .object({
    theme: z.enum(["light", "dark", "auto"], { error: "must be light, dark or auto" }),
    // The models are the deployment's configuration: the handler checks the id against them.
    defaultModel: z
      .string({ error: "must be a model id from GET /models" })
      .min(1)
      .max(200)
      .openapi({ example: "svc-70b", description: "A model id from GET /models" }),
    voiceInput: z.boolean({ error: "must be true or false" }),
    language: Language,
  })
  .openapi("Preferences");

const PreferencesPatch = z.strictObject(
  {
    theme: PreferencesSchema.shape.theme.optional(),
    defaultModel: PreferencesSchema.shape.defaultModel.optional(),
    voiceInput: PreferencesSchema.shape.voiceInput.optional(),
    language: Language.optional(),
  },
  { error: (issue) => unknownKeysMessage(issue, "theme, defaultModel, voiceInput, language") },
);

/** The most presets a profile keeps. */
export const MAX_PRESETS = 50;

const PresetSchema = z
  .strictObject(
    {
      name: text(1, 100, { trim: true, message: "must be 1..100 characters (not counting spaces around it)" }).openapi({ example: "Gardening coach" }),
      instructions: text(1, MAX_INSTRUCTIONS, { trim: true, message: `must be 1..${MAX_INSTRUCTIONS} characters, not only spaces` }).openapi({
        example: "You are a patient gardening coach. Answer in metric units.",
      }),
    },
    { error: (issue) => unknownKeysMessage(issue, "name, instructions") },
  )
  .openapi("Preset");

const Presets = z
  .array(PresetSchema)
  .max(MAX_PRESETS, `must hold at most ${MAX_PRESETS} presets`)
  .superRefine((presets, ctx) => {
    const seen = new Set<string>();
    presets.forEach((p, i) => {
      if (seen.has(p.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `"${excerpt(p.name)}" is the name of another preset` });
      seen.add(p.name);
    });
  })
  .openapi({ description: "Named instructions to start a context from; names are unique" });

const ProfilePatchSchema = z
  .strictObject(
    {
      name: ProfileName.optional(),
      avatarUrl: AvatarUrl.optional(),
      preferences: PreferencesPatch.optional(),
      presets: Presets.optional().openapi({ description: "Replaces the whole list" }),
    },
    { error: (issue) => unknownKeysMessage(issue, "name, avatarUrl, preferences, presets") },
  )
  .openapi("ProfilePatch");

const ProfileSchema = z
  .object({
    id: serviceId("usr", "usr_3q2-7wEjU8n5Rk1vLxZc9A"),
    name: z.string(),
    avatarUrl: z.string().nullable(),
    preferences: PreferencesSchema,
    presets: z.array(PresetSchema),
    identity: z.object({
      issuer: z.string(),
      subject: z.string(),
      email: z.string().optional(),
      wallet: z.string().optional(),
    }),
    identities: z.array(SignInMethodSchema).openapi({ description: "Every way the person signs in to this account, oldest first" }),
    createdAt: z.string().openapi({ format: "date-time" }),
    role: z.enum(["admin", "user"]).openapi({ description: "`admin` when the service's ADMINS names this account: the operator's console (/admin/*) is open to it" }),
  })
  .openapi("Profile");

const profileReply = { description: "The caller's profile", content: { "application/json": { schema: ProfileSchema } } };

const getMe = authenticatedRoute({
  method: "get",
  path: "/me",
  tags: ["profile"],
  summary: "The caller's profile (created on first sign-in)",
  responses: { 200: profileReply },
});

const patchMe = authenticatedRoute({
  method: "patch",
  path: "/me",
  tags: ["profile"],
  summary: "Update the caller's profile; absent fields stay, preferences merge",
  // No body changes nothing, as `{}` does.
  request: { body: { required: false, content: { "application/json": { schema: ProfilePatchSchema } } } },
  responses: { 200: profileReply },
});

const deleteMe = authenticatedRoute(
  {
    method: "delete",
    path: "/me",
    tags: ["profile"],
    summary: "Erase the account: sessions, keys, contexts, messages, shares, groups, presets, profile and sign-in methods (a session or provider token, not an API key)",
    description:
      "Takes `{ confirm: <the account's id> }`. Usage rows are kept without anything that points at the person. The same identity signing in later gets a new, empty account.",
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.strictObject({ confirm: z.string().min(1).max(100).openapi({ description: "The account's id (GET /me `id`), to say it is meant", example: "usr_3q2-7wEjU8n5Rk1vLxZc9A" }) }).openapi("Erasure"),
          },
        },
      },
    },
    responses: { 204: { description: "Erased" } },
  },
  { jwtOnly: true, errors: [422] },
);

export const meRoutes = createRouter()
  .openapi(getMe, async (c) => {
    const { db, now, models, config } = c.get("deps");
    return c.json(toJson(await getProfile(db, c.get("principal"), now(), defaultModelOf(models), config.admins)), 200);
  })
  .openapi(patchMe, async (c) => {
    const { db, now, models, config } = c.get("deps");
    const { name, avatarUrl, preferences, presets } = c.req.valid("json");
    const chosen = preferences?.defaultModel;
    if (chosen !== undefined && !models.get(chosen)) {
      throw new ApiError("invalid_request", `invalid request body: preferences.defaultModel: must be a known model id: ${listIds(models)}`, {
        field: "preferences.defaultModel",
      });
    }
    const changes = {
      name,
      avatarUrl,
      presets,
      preferences: preferences && {
        ...preferences,
        ...(preferences.language === undefined ? {} : { language: canonicalLanguage(preferences.language)! }),
      },
    };
    return c.json(toJson(await updateProfile(db, c.get("principal"), changes, now(), defaultModelOf(models), config.admins)), 200);
  })
  .openapi(deleteMe, async (c) => {
    const { userId } = c.get("principal");
    if (c.req.valid("json").confirm !== userId) {
      throw new ApiError("confirmation_mismatch", `to erase this account, send { "confirm": "${userId}" }: its id, as GET /me shows it`, { field: "confirm" });
    }
    const gone = () => new ApiError("unauthenticated", "the account behind this credential no longer exists");
    await eraseAccount(c.get("deps"), userId, gone);
    c.get("deps").suspendedAccounts.note(userId, undefined);
    return c.body(null, 204);
  });

function toJson(profile: Profile | null) {
  if (!profile) throw new ApiError("unauthenticated", "the account behind this credential no longer exists; sign in again");
  return { ...profile, identities: profile.identities.map(signInMethodJson), createdAt: profile.createdAt.toISOString() };
}

/** The canonical form of a BCP 47 tag (`en-us` becomes `en-US`), or null when it is not one. */
function canonicalLanguage(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}

/** The registry's ids for a message: the first 20, then how many more. */
function listIds(models: ModelRegistry): string {
  const ids = models.list().map((m) => m.id);
  return ids.length <= 20 ? ids.join(", ") : `${ids.slice(0, 20).join(", ")} and ${ids.length - 20} more (GET /models lists them)`;
}

function unknownKeysMessage(issue: { code?: string; keys?: string[] }, allowed: string): string | undefined {
  if (issue.code !== "unrecognized_keys") return undefined;
  const keys = (issue.keys ?? []).slice(0, 3).map((k) => JSON.stringify(excerpt(k)));
  return `unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}; allowed: ${allowed}`;
}
