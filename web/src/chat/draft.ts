// The composer's text survives reloads and a trip through login (expired session) in
// sessionStorage, one draft per conversation ("new" for a chat not yet started).
const key = (contextId: string | undefined) => `draft:${contextId ?? "new"}`;

export const readDraft = (contextId: string | undefined) => sessionStorage.getItem(key(contextId)) ?? "";

export function writeDraft(contextId: string | undefined, text: string) {
  if (text) sessionStorage.setItem(key(contextId), text);
  else sessionStorage.removeItem(key(contextId));
}
