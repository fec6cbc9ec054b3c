import { excerpt } from "../../platform/errors";
import { contextNameFrom } from "./context-names";
import { MAX_INSTRUCTIONS } from "./contexts";
import {
  at,
  checkAcyclic,
  checkContent,
  ImportInvalid,
  importedName,
  isObject,
  saneTime,
  storable,
  type ImportedContext,
  type ImportedMessage,
} from "./imported-contexts";

// ---------------------------------------------------------------------------------------
// ChatGPT's data export (conversations.json): an array of conversations, each a tree of
// nodes in `mapping` ({ id, message, parent, children }) whose `current_node` is the end of
// the branch last shown. What a person saw is kept: user and assistant text (and the text
// of messages with images, each image marked), in its tree. Nodes without a message, system
// and tool messages, hidden ones, tool calls and reasoning are left out; a kept message's
// parent is then its nearest kept ancestor. The custom instructions ChatGPT stores in a
// hidden node become the context's instructions.
// ---------------------------------------------------------------------------------------

/** Seconds since the epoch (with a fraction) to milliseconds, between 2000 and a century from `now`; null when absent. */
function seconds(value: unknown, path: string, now: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number") throw new ImportInvalid(path, "must be a time in seconds since 1970, or null");
  return saneTime(value * 1000, path, now, "in seconds since 1970, or null");
}

/** What a node's message shows, or null when it is not one a person saw. */
function shownText(message: Record<string, unknown>, path: string): { role: "user" | "assistant"; text: string } | null {
  const author = message.author;
  if (author !== undefined && !isObject(author)) throw new ImportInvalid(at(path, "author"), "must be an object");
  const role = author?.role;
  if (role !== "user" && role !== "assistant") return null;
  if (message.recipient !== undefined && message.recipient !== null && message.recipient !== "all") return null;
  const metadata = isObject(message.metadata) ? message.metadata : {};
  if (metadata.is_visually_hidden_from_conversation === true) return null;
  const content = message.content;
  if (!isObject(content)) throw new ImportInvalid(at(path, "content"), "must be an object");
  if (content.content_type !== "text" && content.content_type !== "multimodal_text") return null;
  const parts = content.parts ?? [];
  if (!Array.isArray(parts)) throw new ImportInvalid(at(at(path, "content"), "parts"), "must be an array");
  const text = parts
    .map((part) => (typeof part === "string" ? part : isObject(part) && part.content_type === "image_asset_pointer" ? "[image]" : ""))
    .filter((part) => part !== "")
    .join("\n\n");
  return text.trim() === "" ? null : { role, text };
}

/** The custom instructions of a `user_editable_context` node, if this is one. */
function customInstructions(message: Record<string, unknown>): string | null {
  const content = message.content;
  if (!isObject(content) || content.content_type !== "user_editable_context") return null;
  const parts = [content.user_profile, content.user_instructions].filter((p): p is string => typeof p === "string" && p.trim() !== "");
  if (parts.length === 0) return null;
  return Array.from(storable(parts.join("\n\n"))).slice(0, MAX_INSTRUCTIONS).join("");
}

/** One conversation of the export, at `path`; times it lacks are the import's (`now`). */
function conversation(value: unknown, path: string, now: number): ImportedContext {
  if (!isObject(value)) throw new ImportInvalid(path, "must be a conversation (an object with a mapping)");
  const mapping = value.mapping;
  if (!isObject(mapping)) throw new ImportInvalid(at(path, "mapping"), "must be an object of nodes");
  if (value.title !== undefined && value.title !== null && typeof value.title !== "string") throw new ImportInvalid(at(path, "title"), "must be a string or null");
  const created = seconds(value.create_time, at(path, "create_time"), now);
  const updated = seconds(value.update_time, at(path, "update_time"), now);
  const parents = nodeParents(mapping, at(path, "mapping"));
  const current = value.current_node ?? null;
  if (current !== null && (typeof current !== "string" || !parents.has(current))) {
    throw new ImportInvalid(at(path, "current_node"), "names no node of this conversation");
  }
  const { kept, instructions } = keptMessages(mapping, at(path, "mapping"), { now, created });
  const keptAtOrAbove = nearestKept(kept, parents);
  for (const message of kept.values()) message.parentKey = keptAtOrAbove(parents.get(message.key) ?? null);

  const list = [...kept.values()].sort((a, b) => a.createdAt - b.createdAt);
  const firstQuestion = list.find((m) => m.role === "user");
  return {
    name: importedName(value.title as string | null | undefined, firstQuestion ? contextNameFrom(firstQuestion.content) : "Imported conversation"),
    nameSource: "person",
    groupName: null,
    instructions,
    pinned: false,
    archived: value.is_archived === true,
    createdAt: created ?? list[0]?.createdAt ?? now,
    updatedAt: updated ?? created ?? list.at(-1)?.createdAt ?? now,
    leafKey: keptAtOrAbove(current),
    messages: list,
    sourceId: typeof value.id === "string" ? value.id.slice(0, 200) : typeof value.conversation_id === "string" ? value.conversation_id.slice(0, 200) : null,
  };
}

/** Every node's parent, checked: a tree over the mapping's keys. */
function nodeParents(mapping: Record<string, unknown>, path: string): Map<string, string | null> {
  const nodePath = (id: string) => at(path, id);
  const parents = new Map<string, string | null>();
  for (const [id, node] of Object.entries(mapping)) {
    if (!isObject(node)) throw new ImportInvalid(nodePath(id), "must be a node (an object with message, parent and children)");
    const parent = node.parent ?? null;
    if (parent !== null && typeof parent !== "string") throw new ImportInvalid(at(nodePath(id), "parent"), "must be a node id or null");
    if (parent !== null && !(parent in mapping)) throw new ImportInvalid(at(nodePath(id), "parent"), `names no node of this conversation ("${excerpt(parent)}")`);
    if (node.children !== undefined && !(Array.isArray(node.children) && node.children.every((c) => typeof c === "string"))) {
      throw new ImportInvalid(at(nodePath(id), "children"), "must be an array of node ids");
    }
    if (node.message !== undefined && node.message !== null && !isObject(node.message)) throw new ImportInvalid(at(nodePath(id), "message"), "must be an object or null");
    parents.set(id, parent);
  }
  checkAcyclic(parents, (id) => at(nodePath(id), "parent"));
  return parents;
}

/** The messages a person saw (their parents linked later), and the custom instructions, if any node carries them. */
function keptMessages(mapping: Record<string, unknown>, path: string, time: { now: number; created: number | null }): { kept: Map<string, ImportedMessage>; instructions: string | null } {
  let instructions: string | null = null;
  const kept = new Map<string, ImportedMessage>();
  for (const [id, node] of Object.entries(mapping) as Array<[string, Record<string, unknown>]>) {
    const message = node.message;
    if (!isObject(message)) continue;
    instructions ??= customInstructions(message);
    const messagePath = at(at(path, id), "message");
    const shown = shownText(message, messagePath);
    if (!shown) continue;
    const metadata = isObject(message.metadata) ? message.metadata : {};
    const model = shown.role === "assistant" && typeof metadata.model_slug === "string" ? storable(metadata.model_slug).slice(0, 100) : null;
    kept.set(id, {
      key: id,
      parentKey: null,
      role: shown.role,
      content: checkContent(shown.text, at(at(messagePath, "content"), "parts")),
      model,
      createdAt: seconds(message.create_time, at(messagePath, "create_time"), time.now) ?? time.created ?? time.now,
    });
  }
  return { kept, instructions };
}

/** For any node, the nearest kept message at or above it (memoised along each walk up). */
function nearestKept(kept: Map<string, ImportedMessage>, parents: Map<string, string | null>): (id: string | null) => string | null {
  const nearest = new Map<string, string | null>();
  return (id) => {
    const path: string[] = [];
    let found: string | null = null;
    for (let node = id; node !== null; node = parents.get(node) ?? null) {
      if (nearest.has(node)) {
        found = nearest.get(node)!;
        break;
      }
      path.push(node);
      if (kept.has(node)) {
        found = node;
        break;
      }
    }
    for (const node of path) nearest.set(node, found);
    return found;
  };
}

/** ChatGPT's conversations.json: an array of conversations, or one conversation. */
export function fromChatGpt(file: unknown[] | Record<string, unknown>, now: number): ImportedContext[] {
  return Array.isArray(file) ? file.map((c, i) => conversation(c, `[${i}]`, now)) : [conversation(file, "", now)];
}
