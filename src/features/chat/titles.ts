import { and, eq } from "drizzle-orm";
import { contexts } from "../../../schema/index";
import type { RegisteredModel } from "../../platform/models/registry";
import { contextNameFrom } from "../contexts/context-names";
import type { ChatDeps } from "./exchange";

// ---------------------------------------------------------------------------------------
// A new context is named after its first message's first words; once its first reply is
// stored, the model that wrote it is asked for a short title, free to the person, in the
// background (the reply never waits for it). The title replaces the first words only if
// they are still the name: a name the person set is never replaced, and a failed or empty
// title leaves the first words.
// ---------------------------------------------------------------------------------------

/** The instructions of a title request (the loopback upstream of the tests knows them by this text). */
export const TITLE_INSTRUCTIONS =
  "Write a short title for the conversation below: at most six words, in the language of the conversation, " +
  "no quotation marks, no final period. Reply with the title only.";

/** How much of the first message and of the reply the model is shown. */
const EXCERPT_CHARS = 1500;

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
 * it, unless someone renamed it meanwhile. Never throws: a failure is logged and leaves the
 * first words. Costs no credits.
 */
export async function writeTitle(
  deps: ChatDeps,
  input: { userId: string; contextId: string; model: RegisteredModel; message: string; reply: string; requestId: string },
): Promise<void> {
  const { db, log, config } = deps;
  try {
    const text = await input.model.adapter!.complete({
      messages: [
        { role: "system", content: TITLE_INSTRUCTIONS },
        { role: "user", content: `${input.message.slice(0, EXCERPT_CHARS)}\n\n---\n\n${input.reply.slice(0, EXCERPT_CHARS)}` },
      ],
      sampling: { maxTokens: 24, temperature: 0.2 },
      signal: AbortSignal.timeout(config.MODEL_TIMEOUT_MS),
    });
    const title = cleanTitle(text.replaceAll("\u0000", ""));
    if (!title) {
      log.info("context title left as its first words: the model wrote none", { requestId: input.requestId, contextId: input.contextId });
      return;
    }
    await db
      .update(contexts)
      .set({ name: title, nameSource: "model" })
      .where(and(eq(contexts.id, input.contextId), eq(contexts.userId, input.userId), eq(contexts.nameSource, "message")));
  } catch (err) {
    log.info("context title left as its first words", { requestId: input.requestId, contextId: input.contextId, model: input.model.id, err });
  }
}
