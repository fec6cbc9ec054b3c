import { and, eq } from "drizzle-orm";
import { contexts } from "../../../schema/index";
import type { Principal } from "../../platform/auth/principal";
import { Batch, step } from "../../platform/db";
import { timeOrderedId } from "../../platform/encoding";
import type { ModelOutcome } from "../../platform/models/adapter";
import type { RegisteredModel } from "../../platform/models/registry";
import { estimateTokens } from "../../platform/models/tokens";
import { contextNameFrom } from "../contexts/context-names";
import { usageStatements } from "../account/usage";
import type { ChatDeps } from "./exchange";

// ---------------------------------------------------------------------------------------
// A new context is named after its first message's first words; once its first reply is
// stored, a model is asked for a short title in the background (the reply never waits for
// it). Titles cost the operator a model call, so they are asked only where they are seen:
// for people's sign-ins, not API keys (TITLES=all asks for those too, TITLES=off for none),
// of TITLE_MODEL when it is set (a cheap, fast model), else of the model that answered,
// with a short excerpt and room for a few words. Their tokens are recorded as the
// operator's usage, apart from the person's credits. The title replaces the first words
// only if they are still the name: a name the person set is never replaced, and a failed
// or empty title leaves the first words.
// ---------------------------------------------------------------------------------------

/** The instructions of a title request (the loopback upstream of the tests knows them by this text). */
export const TITLE_INSTRUCTIONS =
  "Write a short title for the conversation below: at most six words, in the language of the conversation, " +
  "no quotation marks, no final period. Reply with the title only.";

/** How much of the first message and of the reply the model is shown: their first words say what the conversation is about. */
const EXCERPT_CHARS = 400;

/** The most tokens a title may take: six words, with room for a language with long ones. */
const TITLE_TOKENS = 20;

/**
 * The model a new context's title is asked of, or undefined when none is: TITLES=off, or an
 * API key's context without TITLES=all. TITLE_MODEL when it names an available model, else
 * `answered`, the model that wrote the first reply.
 */
export function titleModelFor(deps: ChatDeps, principal: Principal, answered: string): RegisteredModel | undefined {
  const { TITLES, TITLE_MODEL } = deps.config;
  if (TITLES === "off" || (TITLES === "on" && principal.via === "api-key")) return undefined;
  const chosen = TITLE_MODEL === undefined ? undefined : deps.models.get(TITLE_MODEL);
  if (chosen?.available) return chosen;
  if (TITLE_MODEL !== undefined) deps.log.warn("TITLE_MODEL is not an available model: titles are asked of the model that answered", { titleModel: TITLE_MODEL });
  const model = deps.models.get(answered);
  return model?.available ? model : undefined;
}

/** The model's answer as a context name: its first line, without quotes, a `Title:` label or a final period; null when nothing is left. */
export function cleanTitle(text: string): string | null {
  const line = text
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l !== "");
  if (!line) return null;
  const title = line
    .replace(/^(?:#+\s*|\*\*|title\s*:\s*)+/i, "")
    .replace(/\*\*$/, "")
    .replace(/^["'“‘«]+|["'”’»]+$/g, "")
    .replace(/\.+$/, "")
    .trim();
  return title === "" ? null : contextNameFrom(title);
}

/**
 * Asks `model` for a title of a new context's first exchange and names the context with
 * it, unless someone renamed it meanwhile; the call's tokens are recorded as the operator's
 * in the same batch. Never throws: a failure is logged and leaves the first words. Costs
 * the person no credits.
 */
export async function writeTitle(
  deps: ChatDeps,
  input: { userId: string; contextId: string; model: RegisteredModel; message: string; reply: string; requestId: string },
): Promise<void> {
  const { db, log, config } = deps;
  try {
    const excerpt = `${input.message.slice(0, EXCERPT_CHARS)}\n\n---\n\n${input.reply.slice(0, EXCERPT_CHARS)}`;
    let outcome: ModelOutcome = {};
    const text = await input.model.adapter!.complete({
      messages: [
        { role: "system", content: TITLE_INSTRUCTIONS },
        { role: "user", content: excerpt },
      ],
      sampling: { maxTokens: TITLE_TOKENS, temperature: 0.2 },
      signal: AbortSignal.timeout(config.MODEL_TIMEOUT_MS),
      onOutcome: (o) => void (outcome = o),
    });
    const title = cleanTitle(text.replaceAll("\u0000", ""));
    const usage = usageStatements(db, {
      id: timeOrderedId("use"),
      userId: input.userId,
      at: deps.now(),
      model: input.model.id,
      contextId: input.contextId,
      messageId: null,
      credits: 0,
      kind: "title",
      inputTokens: outcome.usage?.promptTokens ?? estimateTokens(TITLE_INSTRUCTIONS + excerpt),
      outputTokens: outcome.usage?.completionTokens ?? estimateTokens(text),
      tokensEstimated: outcome.usage === undefined,
    }, deps.now());
    const batch = new Batch();
    for (const s of usage) batch.add(s);
    if (title) {
      batch.add(
        step(
          db
            .update(contexts)
            .set({ name: title, nameSource: "model" })
            .where(and(eq(contexts.id, input.contextId), eq(contexts.userId, input.userId), eq(contexts.nameSource, "message"))),
        ),
      );
    }
    await batch.run(db);
    if (!title) log.info("context title left as its first words: the model wrote none", { requestId: input.requestId, contextId: input.contextId });
  } catch (err) {
    log.info("context title left as its first words", { requestId: input.requestId, contextId: input.contextId, model: input.model.id, err });
  }
}
